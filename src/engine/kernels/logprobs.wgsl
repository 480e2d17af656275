// Prompt logprobs (grid: up to 65535 x ceil(T / 65535), WG threads): one workgroup per prefill
// row of logits [T, V]. Row r predicts targets[r]; writes the target's raw logprob (floored at
// -9999), its vLLM rank (the number of tokens with a logit >= its own, itself included) and the k
// best tokens by raw logprob, best first, ties to the lower id.
// Output row r: out[r * (2 + 2k) ..] = logprob bits, rank, then k (id, logprob bits) pairs.
// Prepended: sampler-common.wgsl, sampler-radix.wgsl. Not here: the sampler (sampler-*.wgsl).

var<private> sel_base: u32;

fn sel_value(i: u32) -> f32 {
  return logits[sel_base + i];
}

fn sel_id(i: u32) -> u32 {
  return i;
}

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_c: array<u32, WG>;
var<workgroup> th_max: array<f32, WG>;
var<workgroup> wg_stats: vec4<f32>;        // max, sum of exp(x - max)
var<workgroup> wg_bound: atomic<u32>;
var<workgroup> wg_bound_plain: u32;

@compute @workgroup_size(WG)
fn prompt_logprobs(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) grid: vec3<u32>,
  @builtin(local_invocation_index) t: u32,
) {
  let r = wid.y * grid.x + wid.x;
  if (r >= arrayLength(&targets)) { return; }
  let V = pdims.V;
  let k = min(pdims.k, MAX_TOP);
  sel_base = r * V;
  sel_len = V;
  sel_id_end = V;
  let next_id = targets[r];
  var xa = MASKED;
  if (next_id < V) { xa = logits[sel_base + next_id]; }

  var m = NEG_BIG;
  var s = 0.0;
  var ge = 0u;
  for (var i = t; i < V; i += WG) {
    let x = logits[sel_base + i];
    if (x > m) {
      s = s * exp(m - x) + 1.0;
      m = x;
    } else {
      s += exp(x - m);
    }
    ge += select(0u, 1u, x >= xa);
  }
  th_max[t] = m;
  red_m[t] = m;
  red_s[t] = s;
  red_c[t] = ge;
  workgroupBarrier();
  for (var off = WG / 2u; off > 0u; off = off >> 1u) {
    if (t < off) {
      let m2 = red_m[t + off];
      let mm = max(red_m[t], m2);
      red_s[t] = red_s[t] * exp(red_m[t] - mm) + red_s[t + off] * exp(m2 - mm);
      red_m[t] = mm;
      red_c[t] += red_c[t + off];
    }
    workgroupBarrier();
  }
  if (t == 0u) { wg_stats = vec4<f32>(red_m[0], red_s[0], 0.0, 0.0); }
  let stats = workgroupUniformLoad(&wg_stats);
  let lse = stats.x + log(stats.y);
  let stride = 2u + 2u * k;
  if (t == 0u) {
    out[r * stride] = bitcast<u32>(floor_logprob(xa - lse));
    out[r * stride + 1u] = red_c[0];
  }
  if (k == 0u) { return; }

  // The k-th largest per-thread max bounds the k-th largest element from below.
  if (t == 0u) { atomicStore(&wg_bound, 0u); }
  workgroupBarrier();
  let mine = th_max[t];
  var rank = 0u;
  for (var j = 0u; j < WG; j++) {
    let o = th_max[j];
    rank += select(0u, 1u, o > mine || (o == mine && j < t));
  }
  if (rank == k - 1u) { atomicStore(&wg_bound, order_key(mine)); }
  workgroupBarrier();
  if (t == 0u) { wg_bound_plain = atomicLoad(&wg_bound); }
  let bound = workgroupUniformLoad(&wg_bound_plain);

  top_k_sorted(t, k, bound, order_key(stats.x));
  if (t < k) {
    out[r * stride + 2u + 2u * t] = sorted_id[t];
    out[r * stride + 3u + 2u * t] = bitcast<u32>(floor_logprob(key_value(sorted_key[t]) - lse));
  }
}
