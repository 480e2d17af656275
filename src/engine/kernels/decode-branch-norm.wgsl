// Sandwich norms (Gemma 3) on the fused decode path: a branch output (o_proj's, or the MLP's sum of
// split-K partials) is RMS-normalised over its whole row before it joins the residual. With no
// grid-wide barrier, every workgroup that stages the residual computes the branch's rstd itself: one
// pass over the row before staging (C floats per batch row, from L2), instead of a dispatch.
// Hooks the kernel defines: branch_x(b, k) -> f32, element k of the branch row of this workgroup's
// batch row b, and stage_x(b, k) (the GEMV core's); names it has: STREAM, P.C, P.bcap and the private
// b0 (first batch row). Needs consts WG and BB and the reduction helpers.

var<workgroup> branch_rstd: array<f32, BB>;

// Fills branch_rstd[b] = 1 / sqrt(mean_k branch_x(b, k)^2 + eps) for the nb batch rows in use.
// Uniform control flow only (barriers).
fn branch_norm(lid: u32, C: u32, nb: u32, eps: f32) {
  var sq = array<f32, BB>();
  for (var k = lid; k < C; k += WG) {
    for (var b = 0u; b < nb; b++) {
      let x = branch_x(b, k);
      sq[b] += x * x;
    }
  }
  let t = group_sum(lid, sq, WG);
  if (lid == 0u) {
    for (var b = 0u; b < BB; b++) {
      branch_rstd[b] = inverseSqrt(t[b] / f32(C) + eps);
    }
  }
  workgroupBarrier();
}

// Writes this workgroup's share of the residual rows it stages (stage_x) to stream block `block`:
// workgroup `part` of `parts` owns columns [part * ceil(C / parts), ...), so the grid writes each
// element once. The kernel reads other blocks than the one written (decode-stream.ts).
fn write_share(lid: u32, part: u32, parts: u32, nb: u32, block: u32) {
  let per = (P.C + parts - 1u) / parts;
  let k0 = part * per;
  for (var i = lid; i < per * nb; i += WG) {
    let b = i / per;
    let k = k0 + i % per;
    if (k < P.C) {
      STREAM[(block * P.bcap + b0 + b) * P.C + k] = stage_x(b, k);
    }
  }
}
