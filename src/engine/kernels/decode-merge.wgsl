// The merge of decode-attention partials as the kernels that stage it read it (DecodeOProj, and
// DecodeLora's o shrink). Partials: f32 [B, NH, S, HS + 2] = (o[HS], m, l) per split, o unnormalised:
// out = sum_s o_s exp(m_s - M) / sum_s l_s exp(m_s - M), M = max_s m_s. Needs the binding AP, the
// uniforms P.S and P.HS and the caller's workgroup array `coef`.

// The weights exp(m_s - M) / L of one (row, head)'s splits into coef[at + s]; `first`: the partials
// index of its split 0, (row * NH + head) * S.
fn merge_weights(first: u32, at: u32) {
  let W2 = P.HS + 2u;
  var M = -3.0e38;
  for (var s = 0u; s < P.S; s++) {
    M = max(M, AP[(first + s) * W2 + P.HS]);
  }
  var L = 0.0;
  for (var s = 0u; s < P.S; s++) {
    L += AP[(first + s) * W2 + P.HS + 1u] * exp(AP[(first + s) * W2 + P.HS] - M);
  }
  let inv = select(0.0, 1.0 / L, L > 0.0);
  for (var s = 0u; s < P.S; s++) {
    coef[at + s] = exp(AP[(first + s) * W2 + P.HS] - M) * inv;
  }
}

// Element d of that (row, head)'s merged output, its weights at coef[at]: one multiply-add per split.
fn merged(first: u32, at: u32, d: u32) -> f32 {
  var acc = 0.0;
  for (var s = 0u; s < P.S; s++) {
    acc += coef[at + s] * AP[(first + s) * (P.HS + 2u) + d];
  }
  return acc;
}
