// SwiGLU activation of the prefill MLP: out[t, f] = silu(gu[t, f]) * gu[t, F + f], reading the fused
// [gate | up] GEMM output (row stride in_stride, usually 2F). One invocation per output element.
// GELU (Gemma's GeGLU): gelu_tanh(g) * u instead (activation.wgsl).

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= P.T * P.F) {
    return;
  }
  let t = i / P.F;
  let f = i % P.F;
  let g = GU[t * P.in_stride + f];
  let u = GU[t * P.in_stride + P.F + f];
  if (GELU) {
    OUT[t * P.out_stride + f] = gelu_tanh(g) * u;
  } else {
    OUT[t * P.out_stride + f] = g / (1.0 + exp(-g)) * u;
  }
}
