// Sampler pass 2 of 4 (grid: B, WG threads): one workgroup per row.
// Merges the chunk partials into the row's raw log-sum-exp and processed max, then turns min_p,
// top_k and top_p into one logit threshold over the processed row (radix select, no sort):
//   min_p: key(proc_max + ln min_p)  (p >= min_p * p_max  <=>  z >= z_max + ln min_p)
//   top_k: the k-th largest remaining value (ties kept), pruned below by the k-th largest chunk max
//   top_p: the value where the descending cumulative mass of the remaining tokens reaches top_p
// and, when top logprobs are asked for, finds the exact top-k of the raw (grammar-masked) row.
// With a selective lower bound (top_k, top logprobs), one read of the row copies the few
// elements above it into a per-row candidate list, and the radix rounds then read that list
// instead of the row (a row read by one workgroup is the slow part of this pass on a GPU).
// Prepended: sampler-common.wgsl, sampler-reduce.wgsl, sampler-radix.wgsl. Not here: the draw, outputs.

// Capacity of a row's candidate list; a larger candidate set is selected from the row itself.
const CANDIDATES: u32 = 4096u;

const SRC_RAW: u32 = 0u;          // the logits row with the grammar mask
const SRC_PROCESSED: u32 = 1u;    // the processed row
const SRC_LIST: u32 = 2u;         // the row's candidate list

var<private> sel_src: u32;
var<private> sel_base: u32;       // b * V
var<private> sel_list_base: u32;  // b * CANDIDATES
var<private> sel_grammar: bool;
var<private> sel_grammar_base: u32;

// Element i of the list being selected.
fn sel_value(i: u32) -> f32 {
  if (sel_src == SRC_LIST) { return bitcast<f32>(candidates[sel_list_base + i].y); }
  if (sel_src == SRC_PROCESSED) { return processed[sel_base + i]; }
  var x = logits[sel_base + i];
  if (sel_grammar && !mask_bit(grammar[sel_grammar_base + (i >> 5u)], i)) { x = MASKED; }
  return x;
}

fn sel_id(i: u32) -> u32 {
  if (sel_src == SRC_LIST) { return candidates[sel_list_base + i].x; }
  return i;
}

var<workgroup> wg_found: atomic<u32>;
var<workgroup> wg_found_plain: u32;

// Copies the elements of the current row with key >= low into the candidate list and, when they
// all fit, makes the list the current one. Call with a row (not a list) current.
fn use_candidates(t: u32, low: u32) {
  if (t == 0u) { atomicStore(&wg_found, 0u); }
  workgroupBarrier();
  for (var i = t; i < sel_len; i += WG) {
    let v = sel_value(i);
    if (order_key(v) >= low) {
      let at = atomicAdd(&wg_found, 1u);
      if (at < CANDIDATES) { candidates[sel_list_base + at] = vec2<u32>(i, bitcast<u32>(v)); }
    }
  }
  // Later reads of the list come from other threads of this workgroup.
  storageBarrier();
  if (t == 0u) { wg_found_plain = atomicLoad(&wg_found); }
  let found = workgroupUniformLoad(&wg_found_plain);
  if (found <= CANDIDATES) {
    sel_src = SRC_LIST;
    sel_len = found;
  }
}

var<workgroup> wg_row: SampleRow;
var<workgroup> wg_stats: vec4<f32>;      // raw max, raw sum, proc max
var<workgroup> wg_kth: atomic<u32>;      // key of the k-th largest chunk max
var<workgroup> wg_kth_plain: u32;

// Key of the k-th largest of the row's chunk maxima (component comp of chunk_stats), ties by chunk
// index; 0 (no bound) when there are fewer than k chunks. A valid lower bound of the k-th
// largest element: k distinct elements are at least that large.
fn kth_chunk_max(t: u32, b: u32, k: u32, comp: u32) -> u32 {
  if (t == 0u) { atomicStore(&wg_kth, 0u); }
  workgroupBarrier();
  let nc = dims.num_chunks;
  if (k <= nc) {
    for (var c = t; c < nc; c += WG) {
      let v = chunk_stats[b * nc + c][comp];
      var rank = 0u;
      for (var d = 0u; d < nc; d++) {
        let w = chunk_stats[b * nc + d][comp];
        rank += select(0u, 1u, w > v || (w == v && d < c));
      }
      if (rank == k - 1u) { atomicStore(&wg_kth, order_key(v)); }
    }
  }
  workgroupBarrier();
  if (t == 0u) { wg_kth_plain = atomicLoad(&wg_kth); }
  return workgroupUniformLoad(&wg_kth_plain);
}

@compute @workgroup_size(WG)
fn select_row(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.x;
  let V = dims.V;
  let nc = dims.num_chunks;
  if (t == 0u) { wg_row = rows[b]; }
  let row = workgroupUniformLoad(&wg_row);

  // Row statistics from the chunk partials.
  var rm = MASKED;
  var rs = 0.0;
  var pm = MASKED;
  for (var c = t; c < nc; c += WG) {
    let st = chunk_stats[b * nc + c];
    let m = max(rm, st.x);
    rs = rs * exp(rm - m) + st.y * exp(st.x - m);
    rm = m;
    pm = max(pm, st.z);
  }
  red_m[t] = rm;
  red_s[t] = rs;
  red_p[t] = pm;
  reduce_softmax_stats(t);
  if (t == 0u) { wg_stats = vec4<f32>(red_m[0], red_s[0], red_p[0], 0.0); }
  let stats = workgroupUniformLoad(&wg_stats);
  let raw_max = stats.x;
  // A row whose every token is masked has no distribution; lse 0 floors every logprob at -9999.
  let lse = select(0.0, raw_max + log(stats.y), stats.y > 0.0);
  let proc_max = stats.z;

  sel_base = b * V;
  sel_list_base = b * CANDIDATES;
  sel_id_end = V;
  sel_grammar = (row.flags & F_GRAMMAR) != 0u;
  sel_grammar_base = b * dims.W;

  // Threshold over the processed row. 0 keeps everything: greedy rows, and rows without filters
  // (a masked token, at MASKED, still never beats a real one in the draw).
  var threshold = 0u;
  let filtered = row.min_p > 0.0 || row.top_k > 0u || row.top_p < 1.0;
  if ((row.flags & F_GREEDY) == 0u && filtered && proc_max > MASKED) {
    sel_src = SRC_PROCESSED;
    sel_len = V;
    var low = order_key(MASKED) + 1u;
    if (row.min_p > 0.0) { low = max(low, order_key(proc_max + log(row.min_p))); }
    let high = order_key(proc_max);
    if (row.top_k > 0u) {
      let kth = kth_chunk_max(t, b, row.top_k, 2u);
      let bound = max(low, kth);
      // Above the k-th chunk max sit >= k tokens, usually a few more: top_p then selects among
      // them too (they include every token >= the top_k threshold).
      if (kth != 0u) { use_candidates(t, bound); }
      let s = radix_select(t, SEL_BY_VALUE, 0u, bound, high, row.top_k, 0u, 0.0);
      if (s.none == 0u) { low = max(low, s.key); }
    }
    if (row.top_p < 1.0) {
      let p24 = max(u32(row.top_p * 16777216.0), 1u);
      let s = radix_select(t, SEL_BY_VALUE, 0u, low, high, 0u, p24, proc_max);
      low = max(low, s.key);
    }
    threshold = low;
  }

  // Exact top-k of the raw row for the returned logprobs (and beam candidates).
  let k = min(row.num_top, MAX_TOP);
  if (k > 0u) {
    sel_src = SRC_RAW;
    sel_len = V;
    let bound = kth_chunk_max(t, b, k, 0u);
    if (bound != 0u) { use_candidates(t, bound); }
    top_k_sorted(t, k, bound, order_key(raw_max));
    if (t < k) { row_top[b * MAX_TOP + t] = vec2<u32>(sorted_id[t], bitcast<u32>(key_value(sorted_key[t]))); }
  }
  if (t == 0u) { row_info[b] = RowInfo(raw_max, lse, threshold, proc_max); }
}
