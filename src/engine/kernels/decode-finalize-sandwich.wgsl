// After the last layer of a decode step with sandwich norms (Gemma 3): the residual (block 0) =
// mid + rmsnorm(sum of the pending MLP partials) * post_feedforward_layernorm. The norm needs the
// whole row, so one workgroup per batch row (decode-branch-norm.wgsl). Consts: WG, BB = 1.

var<private> b0: u32;

fn branch_x(b: u32, k: u32) -> f32 {
  return pending_sum((b0 + b) * P.C + k);
}

fn stage_x(b: u32, k: u32) -> f32 {
  return STREAM[(P.mid_block * P.bcap + b0 + b) * P.C + k] + branch_x(b, k) * branch_rstd[b] * VEC[P.norm_off + k];
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  b0 = wid.x;
  branch_norm(lid, P.C, 1u, P.eps);
  write_share(lid, 0u, 1u, 1u, 0u);
}
