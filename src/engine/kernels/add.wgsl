// Residual connection outside a GEMM epilogue: out[out_off + i] += inp[in_off + i], n elements.
// (The prefill GEMMs add o_proj and down_proj into the residual in their epilogue; this is for the
// other cases, e.g. LoRA terms computed apart.)

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < P.n) {
    OUT[P.out_off + i] += IN[P.in_off + i];
  }
}
