// Stages keys k0 .. k0 + BK - 1 of kv head h of block-table row `seq` into the workgroup tiles k_s,
// v_s ([BK][HS/4] vec4s), zeros for keys outside [minPos, maxPos]; the WG threads of the workgroup
// share the copy (thread tid). The caller puts the barrier after it. Used by the tiled prefill
// attention and its backward, which declare k_s, v_s and the sizes BK, HS, WG, NKV.
fn stage_kv_tile(seq: u32, h: u32, k0: u32, minPos: u32, maxPos: u32, tid: u32) {
  let hs4 = HS / 4u;
  for (var e = tid; e < BK * hs4; e += WG) {
    let p = k0 + e / hs4;
    if (p >= minPos && p <= maxPos) {
      let at = kv_index(seq, p, h, NKV, hs4, params.maxBlocksPerSeq) + e % hs4;
      k_s[e] = kCache[at];
      v_s[e] = vCache[at];
    } else {
      k_s[e] = vec4<f32>(0.0);
      v_s[e] = vec4<f32>(0.0);
    }
  }
}
