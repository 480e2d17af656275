// Naive GEMM: one invocation per output, a plain loop over k. The readable definition of the GEMM
// family (operands in gemm-params.wgsl) and the oracle the tiled kernel is tested against on the GPU.

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  let m = gid.y;
  if (m >= P.M || n >= P.N) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < P.K; k++) {
    acc += a_at(m, k) * b_at(k, n);
  }
  store_c(m, n, acc);
}
