// After the last layer of a decode step: residual += the pending MLP partial sums, in the same fixed
// order as every other consumer of the partials. One invocation per element. The final norm is folded
// into the lm_head GEMV that follows (gemv.ts, NORM).

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x;
  if (r >= P.n) {
    return;
  }
  var v = STREAM[r];
  for (var p = 0u; p < P.pending; p++) {
    v += STREAM[(1u + p) * P.bcap * P.C + r];
  }
  STREAM[r] = v;
}
