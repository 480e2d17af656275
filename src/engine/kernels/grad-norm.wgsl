// Global L2 norm of the gradient buffer and the clipping factor (torch.nn.utils.clip_grad_norm_):
//   norm = sqrt(sum_i g_i^2),  clip = min(1, max_norm / (norm + 1e-6))  (1 when max_norm is 0).
// `partial`: workgroup w sums the squares of its contiguous slice [w chunk, (w + 1) chunk) and
// writes PART[w]; `finish` (one workgroup) sums PART in a fixed tree and writes STATS[0] = norm,
// STATS[1] = clip, which AdamW reads on the GPU (no CPU round trip between backward and update).
// Both sums are fixed trees in workgroup memory: the same bits on every run and every adapter.

const WG: u32 = 256u;

var<workgroup> red: array<f32, WG>;

fn tree_sum(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half >>= 1u) {
    if (lid < half) {
      red[lid] += red[lid + half];
    }
    workgroupBarrier();
  }
  return red[0];
}

@compute @workgroup_size(WG)
fn partial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let begin = wid.x * P.chunk;
  let end = min(P.n, begin + P.chunk);
  var s = 0.0;
  for (var i = begin + lid; i < end; i += WG) {
    let g = GRAD[i];
    s += g * g;
  }
  let total = tree_sum(lid, s);
  if (lid == 0u) {
    PART[wid.x] = total;
  }
}

@compute @workgroup_size(WG)
fn finish(@builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = lid; i < P.parts; i += WG) {
    s += PART[i];
  }
  let total = tree_sum(lid, s);
  if (lid == 0u) {
    let norm = sqrt(total);
    var clip = 1.0;
    if (P.max_norm > 0.0) {
      clip = min(1.0, P.max_norm / (norm + 1e-6));
    }
    STATS[0] = norm;
    STATS[1] = clip;
  }
}
