// Sampler pass 1 of 4 (grid: num_chunks x B, WG threads): one workgroup per CHUNK logits of a row.
// Applies vLLM's processing in order -- grammar bitmask (before the raw statistics, as vLLM's model
// runner does), allowed mask, bad-word and min_tokens bans, logit bias, repetition / frequency /
// presence penalties, temperature (not for greedy rows) -- writes the processed row, and emits
// per-chunk partials: online max / sum-exp of the raw logits, max of the processed ones.
// Prepended: sampler-common.wgsl, sampler-reduce.wgsl. Not here: thresholds (select), the draw, outputs.

const NOT_FOUND: u32 = 0xffffffffu;

// First entry in [lo, hi) of the sorted id list at `base` (entries `stride` words apart) whose id >= id.
fn lower_bound(base: u32, stride: u32, lo_in: u32, hi_in: u32, id: u32) -> u32 {
  var lo = lo_in;
  var hi = hi_in;
  while (lo < hi) {
    let mid = (lo + hi) >> 1u;
    if (edits[base + stride * mid] < id) { lo = mid + 1u; } else { hi = mid; }
  }
  return lo;
}

// Entry index of `id` in [lo, hi) of the sorted list, or NOT_FOUND.
fn find(base: u32, stride: u32, lo: u32, hi: u32, id: u32) -> u32 {
  let e = lower_bound(base, stride, lo, hi, id);
  if (e < hi && edits[base + stride * e] == id) { return e; }
  return NOT_FOUND;
}

@compute @workgroup_size(WG)
fn process(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.y;
  let c = wid.x;
  let V = dims.V;
  let W = dims.W;
  let row = rows[b];
  let c0 = c * CHUNK;

  // The row's lists are sorted by id (packEdits): narrow each to this chunk once, then each
  // token binary-searches its slice (empty for most rows, a few entries for most chunks).
  let bias_at = row.edit_offset;
  let ban_at = bias_at + 2u * row.bias_count;
  let bias_lo = lower_bound(bias_at, 2u, 0u, row.bias_count, c0);
  let bias_hi = lower_bound(bias_at, 2u, bias_lo, row.bias_count, c0 + CHUNK);
  let ban_lo = lower_bound(ban_at, 1u, 0u, row.ban_count, c0);
  let ban_hi = lower_bound(ban_at, 1u, ban_lo, row.ban_count, c0 + CHUNK);

  let greedy = (row.flags & F_GREEDY) != 0u;
  let use_grammar = (row.flags & F_GRAMMAR) != 0u;
  let use_allowed = (row.flags & F_ALLOWED) != 0u;
  let use_penalties = (row.flags & F_PENALTIES) != 0u;
  let prompt_base = row.slot * 2u * W;
  let allowed_base = prompt_base + W;
  var rm = MASKED;   // raw running max and sum of exp(x - rm)
  var rs = 0.0;
  var pm = MASKED;   // processed max
  for (var j = t; j < CHUNK; j += WG) {
    let i = c0 + j;
    if (i >= V) { break; }
    var x = logits[b * V + i];
    if (use_grammar && !mask_bit(grammar[b * W + (i >> 5u)], i)) { x = MASKED; }
    if (x > MASKED) {
      if (x > rm) {
        rs = rs * exp(rm - x) + 1.0;
        rm = x;
      } else {
        rs += exp(x - rm);
      }
    }
    var z = MASKED;
    let banned = ban_hi > ban_lo && find(ban_at, 1u, ban_lo, ban_hi, i) != NOT_FOUND;
    let allowed = !use_allowed || mask_bit(masks[allowed_base + (i >> 5u)], i);
    if (x > MASKED && allowed && !banned) {
      z = x;
      if (bias_hi > bias_lo) {
        let e = find(bias_at, 2u, bias_lo, bias_hi, i);
        if (e != NOT_FOUND) { z = x + bitcast<f32>(edits[bias_at + 2u * e + 1u]); }
      }
      if (use_penalties) {
        let n = counts[row.slot * V + i];
        if (n > 0u || mask_bit(masks[prompt_base + (i >> 5u)], i)) {
          z = select(z * row.repetition, z / row.repetition, z > 0.0);
        }
        z = z - row.frequency * f32(n);
        if (n > 0u) { z = z - row.presence; }
      }
      if (!greedy) { z = z / row.temperature; }
    }
    processed[b * V + i] = z;
    pm = max(pm, z);
  }

  red_m[t] = rm;
  red_s[t] = rs;
  red_p[t] = pm;
  reduce_softmax_stats(t);
  if (t == 0u) {
    chunk_stats[b * dims.num_chunks + c] = vec4<f32>(red_m[0], red_s[0], red_p[0], 0.0);
  }
}
