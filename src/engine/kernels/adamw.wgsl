// AdamW update of the LoRA parameters (PyTorch torch.optim.AdamW, non-fused, f32 state), one
// invocation per element:
//   g = grad * clip                       (clip from STATS[1], written by grad-norm's finish)
//   p = p * (1 - lr wd)                   (decoupled weight decay)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p = p - (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps),  bc_k = 1 - b_k^step (1-based step)
// The bias corrections are computed once per step on the CPU in f64 and passed in.

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= P.n) {
    return;
  }
  let g = GRAD[i] * STATS[1];
  var p = PARAM[i] * (1.0 - P.lr * P.wd);
  let m = P.b1 * M1[i] + (1.0 - P.b1) * g;
  let v = P.b2 * M2[i] + (1.0 - P.b2) * g * g;
  M1[i] = m;
  M2[i] = v;
  p -= P.step_size * m / (sqrt(v) / P.bc2_sqrt + P.eps);
  PARAM[i] = p;
}
