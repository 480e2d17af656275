// SwiGLU backward over the fused [gate | up] layout. The forward (swiglu.wgsl) was
//   act[t, f] = silu(g) * u,  g = GU[t, f], u = GU[t, F + f],  silu(g) = g * sig(g)
// so, with d = dact[t, f]:
//   dGU[t, f]     = d * u * sig(g) * (1 + g * (1 - sig(g)))     (d gate)
//   dGU[t, F + f] = d * silu(g)                                  (d up)
// written into the fused layout, so dX = dGU [Wg; Wu] is one GEMM through the fused weight.
// GELU (Gemma's GeGLU, act = gelu_tanh): dGU[t, f] = d * u * gelu_tanh'(g), dGU[t, F + f] = d * gelu_tanh(g).
// One invocation per (t, f). The only producer of dGU, so it writes (no accumulation).

fn gated(e: GatedElem) {
  let d = DACT[e.t * P.d_stride + e.f];
  let at = e.t * P.dgu_stride + e.f; // d gate; d up at at + F
  if (GELU) {
    DGU[at] = d * e.u * gelu_tanh_grad(e.g);
    DGU[at + P.F] = d * gelu_tanh(e.g);
  } else {
    let sig = 1.0 / (1.0 + exp(-e.g));
    DGU[at] = d * e.u * sig * (1.0 + e.g * (1.0 - sig));
    DGU[at + P.F] = d * e.g * sig;
  }
}
