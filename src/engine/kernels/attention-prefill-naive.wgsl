// Prefill attention over the paged KV cache, naive: the readable definition the tiled kernel
// (attention-prefill.wgsl) is tested against, and a fallback. Same bindings and semantics: one
// invocation per (token, query head) walks the keys it sees (first_key .. its position) one at a time with an online
// softmax (running max m, denominator l, accumulator rescaled by exp(m_old - m_new)).

override WG: u32 = 64u;
override HS: u32 = 64u;
override NKV: u32 = 1u;
override G: u32 = 1u;
const MAX_HS: u32 = 256u;

@compute @workgroup_size(WG)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let NH = NKV * G;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid;
  if (idx >= params.T * NH) {
    return;
  }
  let t = idx / NH;
  let qh = idx % NH;
  let kh = qh / G;

  let place = find_row(t); // batch-row-scan.wgsl
  let row = rows[place.x];
  let qpos = row.pos + (t - place.y);
  let qo = (t * NH + qh) * HS;

  var m = NEG_BIG;
  var l = 0.0;
  var acc = array<f32, MAX_HS>();
  for (var p = first_key(qpos, params.window); p <= qpos; p++) {
    let at = kv_index(row.seq, p, kh, NKV, HS, params.maxBlocksPerSeq);
    var s = 0.0;
    for (var d = 0u; d < HS; d++) {
      s += q[qo + d] * kCache[at + d];
    }
    s *= params.scale;
    let mNew = max(m, s);
    let corr = exp(m - mNew);
    let e = exp(s - mNew);
    l = l * corr + e;
    for (var d = 0u; d < HS; d++) {
      acc[d] = acc[d] * corr + e * vCache[at + d];
    }
    m = mNew;
  }
  for (var d = 0u; d < HS; d++) {
    out[qo + d] = acc[d] / l;
  }
  if (params.writeLse != 0u) {
    lse[t * NH + qh] = m + log(l);
  }
}
