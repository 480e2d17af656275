// Sampler pass 4 of 4 (grid: B, 64 threads): one workgroup per row.
// Merges the chunk winners into the sampled token, writes the row's output record -- token id,
// raw logprob floored at -9999, number of top entries -- and its top logprobs (vLLM order: the
// sampled token first, then the best others; or plain rank order for beam search), then counts
// the token in the slot's output counts for the next step's penalties (no CPU round trip).
// Output layout for B rows: B records of 4 words, then B x MAX_TOP (id, logprob) pairs, so the
// caller copies 16*B bytes (no logprobs asked) or 176*B bytes with one copyBufferToBuffer.
// Prepended: sampler-common.wgsl, sampler-reduce.wgsl. Not here: anything over the whole vocabulary.

@compute @workgroup_size(FINISH_WG) // 64 (sampler-reduce.wgsl)
fn finish(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.x;
  let V = dims.V;
  let nc = dims.num_chunks;
  var best = NEG_BIG;
  var best_i = 0xffffffffu;
  for (var c = t; c < nc; c += FINISH_WG) {
    let d = draw_best[b * nc + c];
    let s = bitcast<f32>(d.x);
    if (s > best || (s == best && d.y < best_i)) {
      best = s;
      best_i = d.y;
    }
  }
  red_s[t] = best;
  red_i[t] = best_i;
  reduce_argmax(t, FINISH_WG);
  if (t != 0u) { return; }

  let row = rows[b];
  let info = row_info[b];
  // No token cleared the threshold only when every id is masked: vLLM's argmax then returns 0.
  var token = red_i[0];
  if (token >= V) { token = 0u; }
  var x = logits[b * V + token];
  if ((row.flags & F_GRAMMAR) != 0u && !mask_bit(grammar[b * dims.W + (token >> 5u)], token)) { x = MASKED; }
  let logprob = floor_logprob(x - info.lse);
  let k = min(row.num_top, MAX_TOP);
  output[b * 4u + 0u] = token;
  output[b * 4u + 1u] = bitcast<u32>(logprob);
  output[b * 4u + 2u] = k;
  output[b * 4u + 3u] = 0u;

  let top_base = dims.B * 4u + b * MAX_TOP * 2u;
  var n = 0u;
  if (k > 0u && (row.flags & F_TOP_BY_RANK) == 0u) {
    output[top_base] = token;
    output[top_base + 1u] = bitcast<u32>(logprob);
    n = 1u;
  }
  for (var j = 0u; j < k && n < k; j++) {
    let e = row_top[b * MAX_TOP + j];
    if (n > 0u && (row.flags & F_TOP_BY_RANK) == 0u && e.x == token) { continue; }
    output[top_base + 2u * n] = e.x;
    output[top_base + 2u * n + 1u] = bitcast<u32>(floor_logprob(bitcast<f32>(e.y) - info.lse));
    n += 1u;
  }

  if ((row.flags & F_UPDATE_COUNTS) != 0u) {
    counts[row.slot * V + token] += 1u;
  }
}
