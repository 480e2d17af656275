// Sampler pass 3 of 4 (grid: num_chunks x B, WG threads): one workgroup per CHUNK logits of a row.
// The seeded draw, Gumbel-max: among tokens whose processed logit clears the row's threshold,
// the argmax of z + g(seed, step, token) (greedy rows: of z alone), ties to the lower id; each
// workgroup writes its chunk's best (score, id). Tokens more than GUMBEL_MAX below the thread's
// best so far cannot win, so their hash is skipped (exact: g <= 16.7).
// Prepended: sampler-common.wgsl, sampler-reduce.wgsl. Not here: the merge across chunks (finish pass).

@compute @workgroup_size(WG)
fn draw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.y;
  let c = wid.x;
  let V = dims.V;
  let row = rows[b];
  let threshold = row_info[b].threshold;
  let greedy = (row.flags & F_GREEDY) != 0u;
  let c0 = c * CHUNK;
  var best = NEG_BIG;
  var best_i = 0xffffffffu;
  for (var j = t; j < CHUNK; j += WG) {
    let i = c0 + j;
    if (i >= V) { break; }
    let z = processed[b * V + i];
    if (order_key(z) < threshold) { continue; }
    var s = z;
    if (!greedy) {
      if (z + GUMBEL_MAX < best) { continue; }
      s = z + gumbel(row.seed_lo, row.seed_hi, row.step, i);
    }
    // i grows along the loop, so a tie keeps the earlier (lower) id.
    if (s > best) {
      best = s;
      best_i = i;
    }
  }
  red_s[t] = best;
  red_i[t] = best_i;
  reduce_argmax(t, WG);
  if (t == 0u) { draw_best[b * dims.num_chunks + c] = vec2<u32>(bitcast<u32>(red_s[0]), red_i[0]); }
}
