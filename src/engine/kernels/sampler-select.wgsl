// Sampler pass 2 of 4 (grid: B, WG threads): one workgroup per row.
// Merges the chunk partials into the row's raw log-sum-exp and processed max, then turns min_p,
// top_k and top_p into one logit threshold over the processed row (radix select, no sort):
//   min_p: key(proc_max + ln min_p)  (p >= min_p * p_max  <=>  z >= z_max + ln min_p)
//   top_k: the k-th largest remaining value (ties kept), pruned below by the k-th largest chunk max
//   top_p: the value where the descending cumulative mass of the remaining tokens reaches top_p
// and, when top logprobs are asked for, finds the exact top-k of the raw (grammar-masked) row.
// Prepended: sampler-common.wgsl, sampler-radix.wgsl. Not here: the draw, outputs.

@group(0) @binding(0) var<uniform> dims: SamplerDims;
@group(0) @binding(1) var<storage, read> rows: array<SampleRow>;            // (B)
@group(0) @binding(2) var<storage, read> logits: array<f32>;                // (B, V) raw
@group(0) @binding(3) var<storage, read> grammar: array<u32>;               // (B, W)
@group(0) @binding(4) var<storage, read> processed: array<f32>;             // (B, V)
@group(0) @binding(5) var<storage, read> chunk_stats: array<vec4<f32>>;     // (B, num_chunks)
@group(0) @binding(6) var<storage, read_write> row_info: array<RowInfo>;    // (B)
@group(0) @binding(7) var<storage, read_write> row_top: array<vec2<u32>>;   // (B, MAX_TOP): id, raw value bits

const SRC_RAW: u32 = 0u;
const SRC_PROCESSED: u32 = 1u;

var<private> sel_src: u32;
var<private> sel_base: u32;       // b * V
var<private> sel_grammar: bool;
var<private> sel_grammar_base: u32;

// Element i of the row being selected: the processed logit, or the raw one with the grammar mask.
fn sel_value(i: u32) -> f32 {
  if (sel_src == SRC_PROCESSED) { return processed[sel_base + i]; }
  var x = logits[sel_base + i];
  if (sel_grammar && !mask_bit(grammar[sel_grammar_base + (i >> 5u)], i)) { x = MASKED; }
  return x;
}

var<workgroup> wg_row: SampleRow;
var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_p: array<f32, WG>;
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
  workgroupBarrier();
  for (var off = WG / 2u; off > 0u; off = off >> 1u) {
    if (t < off) {
      let m2 = red_m[t + off];
      let m = max(red_m[t], m2);
      red_s[t] = red_s[t] * exp(red_m[t] - m) + red_s[t + off] * exp(m2 - m);
      red_m[t] = m;
      red_p[t] = max(red_p[t], red_p[t + off]);
    }
    workgroupBarrier();
  }
  if (t == 0u) { wg_stats = vec4<f32>(red_m[0], red_s[0], red_p[0], 0.0); }
  let stats = workgroupUniformLoad(&wg_stats);
  let raw_max = stats.x;
  // A row whose every token is masked has no distribution; lse 0 floors every logprob at -9999.
  let lse = select(0.0, raw_max + log(stats.y), stats.y > 0.0);
  let proc_max = stats.z;

  sel_len = V;
  sel_base = b * V;
  sel_grammar = (row.flags & F_GRAMMAR) != 0u;
  sel_grammar_base = b * dims.W;

  // Threshold over the processed row. 0 keeps everything: greedy rows, and rows without filters
  // (a masked token, at MASKED, still never beats a real one in the draw).
  var threshold = 0u;
  let filtered = row.min_p > 0.0 || row.top_k > 0u || row.top_p < 1.0;
  if ((row.flags & F_GREEDY) == 0u && filtered && proc_max > MASKED) {
    sel_src = SRC_PROCESSED;
    var low = order_key(MASKED) + 1u;
    if (row.min_p > 0.0) { low = max(low, order_key(proc_max + log(row.min_p))); }
    let high = order_key(proc_max);
    if (row.top_k > 0u) {
      let bound = max(low, kth_chunk_max(t, b, row.top_k, 2u));
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
    let bound = kth_chunk_max(t, b, k, 0u);
    top_k_sorted(t, k, bound, order_key(raw_max));
    if (t < k) { row_top[b * MAX_TOP + t] = vec2<u32>(sorted_id[t], bitcast<u32>(key_value(sorted_key[t]))); }
  }
  if (t == 0u) { row_info[b] = RowInfo(raw_max, lse, threshold, proc_max); }
}
