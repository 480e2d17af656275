// SwiGLU activation of the prefill MLP: out[t, f] = silu(gu[t, f]) * gu[t, F + f], reading the fused
// [gate | up] GEMM output (row stride in_stride, usually 2F). One invocation per output element.
// GELU (Gemma's GeGLU): gelu_tanh(g) * u instead (activation.wgsl).

fn gated(e: GatedElem) {
  if (GELU) {
    OUT[e.t * P.out_stride + e.f] = gelu_tanh(e.g) * e.u;
  } else {
    OUT[e.t * P.out_stride + e.f] = e.g / (1.0 + exp(-e.g)) * e.u;
  }
}
