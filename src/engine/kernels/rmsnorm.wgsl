// RMSNorm of rows (prefill side, and the final norm before lm_head on selected rows):
//   out[n] = inp[row(n)] * rsqrt(mean(inp[row(n)]^2) + eps) * weight
// row(n) = IDX[n] with GATHER (e.g. the last token of each sequence), else n. With RSTD the per-row
// 1/rms is saved for a backward pass. With ACCUMULATE, out[n] += ... (Gemma's sandwich norms add
// their output into the residual). One workgroup per row; WG invocations stride the C elements.
// Consts: WG, BB = 1 (reduction helpers), GATHER, RSTD, ACCUMULATE.

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  let n = wid.x + wid.y * nwg.x;
  // n is uniform across the workgroup, so returning here keeps the barriers below uniform.
  if (n >= P.N) {
    return;
  }
  var row = n;
  if (GATHER) {
    row = IDX[n];
  }
  let src = P.in_off + row * P.in_stride;
  var ss = array<f32, 1>();
  for (var c = lid; c < P.C; c += WG) {
    let v = IN[src + c];
    ss[0] += v * v;
  }
  let tot = group_sum(lid, ss, WG);
  if (lid == 0u) {
    red[0] = inverseSqrt(tot[0] / f32(P.C) + P.eps);
    if (RSTD) {
      RS[n] = red[0];
    }
  }
  workgroupBarrier();
  let r = red[0];
  let dst = P.out_off + n * P.out_stride;
  for (var c = lid; c < P.C; c += WG) {
    let y = IN[src + c] * r * VEC[P.w_off + c];
    if (ACCUMULATE) {
      OUT[dst + c] += y;
    } else {
      OUT[dst + c] = y;
    }
  }
}
