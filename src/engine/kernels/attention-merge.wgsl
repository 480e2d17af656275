// Merge of decode-attention partials (docs/engine.md): for row b, head h, over its splits i with
// (o_i[HS], m_i, l_i): M = max m_i, out = sum o_i exp(m_i - M) / sum l_i exp(m_i - M).
// Empty splits (m = -3e38, l = 0) weigh exp(-huge) = 0. One workgroup per (head, row); each thread
// owns output dims d, d + WG, ...; the split weights are recomputed per thread (numSplits exps):
// this kernel is a fallback for when the o_proj prologue fusion is off, and tiny either way.

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let h = wid.x;
  let b = wid.y;
  let HS = params.HS;
  let W = HS + 2u;
  let base = (b * params.NH + h) * params.numSplits * W;
  var M = -3.0e38;
  for (var s = 0u; s < params.numSplits; s++) {
    M = max(M, partials[base + s * W + HS]);
  }
  for (var d = tid; d < HS; d += WG) {
    var acc = 0.0;
    var den = 0.0;
    for (var s = 0u; s < params.numSplits; s++) {
      let at = base + s * W;
      let w = exp(partials[at + HS] - M);
      den += partials[at + HS + 1u] * w;
      acc += partials[at + d] * w;
    }
    out[(b * params.NH + h) * HS + d] = acc / den;
  }
}
