// RMSNorm backward through a frozen norm weight (rows of C). The forward (rmsnorm.wgsl) was
//   out = n * w,  n = x * rstd,  rstd = 1 / sqrt(mean(x^2) + eps)   (rstd saved per row, RSTD)
// so with dn = dout * w:
//   dinp (+)= rstd * (dn - n * mean(dn * n))
// One workgroup per row, WG invocations striding C: one pass for mean(dn * n) (one group_sum),
// one pass writing dinp (the row is re-read, from cache). ACCUM adds into dinp: the residual
// stream's gradient, which also receives the skip connection's.
// Consts: WG, BB = 1 (reduction helpers), ACCUM.

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  let n = wid.x + wid.y * nwg.x;
  // n is uniform across the workgroup, so returning here keeps the barriers below uniform.
  if (n >= P.N) {
    return;
  }
  let x0 = P.in_off + n * P.in_stride;
  let g0 = P.dout_off + n * P.dout_stride;
  let r = RS[P.rstd_off + n];
  var dot = array<f32, 1>();
  for (var c = lid; c < P.C; c += WG) {
    dot[0] += DOUT[g0 + c] * VEC[P.w_off + c] * IN[x0 + c];
  }
  let tot = group_sum(lid, dot, WG);
  if (lid == 0u) {
    // mean(dn * n) = rstd * sum(dout * w * x) / C
    red[0] = tot[0] * r / f32(P.C);
  }
  workgroupBarrier();
  let mean = red[0];
  let d0 = P.dinp_off + n * P.dinp_stride;
  for (var c = lid; c < P.C; c += WG) {
    let v = r * (DOUT[g0 + c] * VEC[P.w_off + c] - IN[x0 + c] * r * mean);
    if (ACCUM) {
      DINP[d0 + c] += v;
    } else {
      DINP[d0 + c] = v;
    }
  }
}
