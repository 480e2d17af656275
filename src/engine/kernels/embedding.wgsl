// Token embedding gather over one row chunk of the embedding: for every token whose id falls in this
// chunk's rows, out[t] = E[id] unpacked to f32, times P.scale (Gemma's normaliser, else 1). One
// dispatch per chunk (the ids live on the GPU, so each chunk checks them itself); tokens of other
// chunks are skipped, ids >= V by all of them. One workgroup per token, 8 elements per load.

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = wid.x + wid.y * nwg.x;
  if (t >= P.T) {
    return;
  }
  let id = TOK[P.tok_off + t];
  if (id < P.row_start || id >= P.row_start + P.rows) {
    return;
  }
  let src = (id - P.row_start) * P.w_stride;
  let dst = P.out_off + t * P.out_stride;
  for (var g = lid; g * 8u < P.C; g += 64u) {
    let w = E_load8(src + 8u * g);
    for (var e = 0u; e < 8u; e++) {
      let c = 8u * g + e;
      if (c < P.C) {
        OUT[dst + c] = w[e / 4u][e % 4u] * P.scale;
      }
    }
  }
}
