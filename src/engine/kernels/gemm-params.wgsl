// Operands of the GEMM family (gemm.wgsl, gemm-naive.wgsl):
// C[m, n] (+)= alpha * sum_k A(m, k) B(k, n) (+ bias[n]); alpha is LoRA's scale s = lora_alpha / r.
// Strides make one kernel serve every layout the prefill and the trainer need: Y = X W^T
// (B(k, n) = W[n, k]), dX = dY W (B(k, n) = W[k, n]), dA = dH^T X (A(m, k) = dH[k, m]).
// A: f32 activations. B: packed weights of any dtype, or f32 activations bound the same way
// (`B: array<vec4<u32>>` read through B_load1 of the packed-f32 accessors). The bindings and
// Params are declared by GEMM_SPEC (gemm.ts); these are the addressing helpers both kernels share.

fn a_at(m: u32, k: u32) -> f32 {
  return A[P.a_off + m * P.a_sm + k * P.a_sk];
}

fn b_at(k: u32, n: u32) -> f32 {
  return B_load1(P.b_off + n * P.b_sn + k * P.b_sk);
}

fn store_c(m: u32, n: u32, acc: f32) {
  var v = P.alpha * acc;
  if (HAS_BIAS) {
    v += VEC[P.bias_off + n];
  }
  let i = P.c_off + m * P.c_sm + n;
  if (ACCUM) {
    C[i] += v;
  } else {
    C[i] = v;
  }
}
