// The merge of decode-attention partials as the kernels that stage it read it (DecodeOProj, and
// DecodeLora's o shrink). Partials: f32 [B, NH, S, HS + 2] = (o[HS], m, l) per split, o unnormalised:
// out = sum_s o_s exp(m_s - M) / sum_s l_s exp(m_s - M), M = max_s m_s. Needs the binding AP, the
// uniforms P.S and P.HS and the caller's workgroup array `coef`.

// The weights exp(m_s - M) / L of one (row, head)'s splits into coef[at + s]; `first`: the partials
// index of its split 0, (row * NH + head) * S.
// The loops over splits issue four splits' loads before using them, and add in split order.
fn merge_weights(first: u32, at: u32) {
  let W2 = P.HS + 2u;
  var M = -3.0e38;
  var s = 0u;
  for (; s + 4u <= P.S; s += 4u) {
    let i = (first + s) * W2 + P.HS;
    let m0 = AP[i];
    let m1 = AP[i + W2];
    let m2 = AP[i + 2u * W2];
    let m3 = AP[i + 3u * W2];
    M = max(max(max(max(M, m0), m1), m2), m3);
  }
  for (; s < P.S; s++) {
    M = max(M, AP[(first + s) * W2 + P.HS]);
  }
  var L = 0.0;
  for (s = 0u; s + 4u <= P.S; s += 4u) {
    let i = (first + s) * W2 + P.HS;
    let m0 = AP[i];
    let l0 = AP[i + 1u];
    let m1 = AP[i + W2];
    let l1 = AP[i + W2 + 1u];
    let m2 = AP[i + 2u * W2];
    let l2 = AP[i + 2u * W2 + 1u];
    let m3 = AP[i + 3u * W2];
    let l3 = AP[i + 3u * W2 + 1u];
    L += l0 * exp(m0 - M);
    L += l1 * exp(m1 - M);
    L += l2 * exp(m2 - M);
    L += l3 * exp(m3 - M);
  }
  for (; s < P.S; s++) {
    L += AP[(first + s) * W2 + P.HS + 1u] * exp(AP[(first + s) * W2 + P.HS] - M);
  }
  let inv = select(0.0, 1.0 / L, L > 0.0);
  for (s = 0u; s < P.S; s++) {
    coef[at + s] = exp(AP[(first + s) * W2 + P.HS] - M) * inv;
  }
}

// Element d of that (row, head)'s merged output, its weights at coef[at]: one multiply-add per split.
fn merged(first: u32, at: u32, d: u32) -> f32 {
  let W2 = P.HS + 2u;
  var acc = 0.0;
  var s = 0u;
  for (; s + 4u <= P.S; s += 4u) {
    let i = (first + s) * W2 + d;
    let a0 = AP[i];
    let a1 = AP[i + W2];
    let a2 = AP[i + 2u * W2];
    let a3 = AP[i + 3u * W2];
    acc += coef[at + s] * a0;
    acc += coef[at + s + 1u] * a1;
    acc += coef[at + s + 2u] * a2;
    acc += coef[at + s + 3u] * a3;
  }
  for (; s < P.S; s++) {
    acc += coef[at + s] * AP[(first + s) * W2 + d];
  }
  return acc;
}
