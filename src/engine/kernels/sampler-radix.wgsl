// Row selection without sorting, for one workgroup of WG threads that owns one row:
// radix select over order keys (the k-th largest value, or where the descending cumulative
// softmax mass reaches top_p), then an exact top-k gather sorted best first.
// The including module defines `fn sel_value(i: u32) -> f32` and `fn sel_id(i: u32) -> u32`
// (value and token id of element i of the current list: the whole row, ids = positions, or a
// compact list of candidates) and sets `sel_len` (the list length) and `sel_id_end` (ids are
// below it) before calling. Used by sampler-select.wgsl and logprobs.wgsl.
//
// Why radix select (the scheme of PyTorch's topk): each round histograms one digit of the keys of
// the remaining candidates into WG bins in workgroup memory (8-bit digits at WG = 256), picks the
// bin holding the target and fixes that digit; <= 4 reads of the row at WG = 256, no sort, exact. Rounds start at the
// highest bit where the lowest and highest candidate keys differ (a lower bound found cheaply
// prunes whole digits) and stop as soon as the chosen bin alone settles the answer (it holds
// exactly the needed count, or a single element), so a typical select takes 1-3 reads.
// Masses for top_p are summed as 64-bit fixed point (2^-31 units of the largest probability)
// with integer atomics: exact, order-independent, hence deterministic (no float atomics exist).
// Not here: bindings, the row statistics, the draw.

// WG (an override of the including module, a power of two >= 32) threads, one bin per thread.
override DIGIT_BITS: u32 = countTrailingZeros(WG);

const SEL_BY_VALUE: u32 = 0u; // candidates: key >= range_lo; ranked by value, largest first
const SEL_TIE_INDEX: u32 = 1u; // candidates: key == match_key; ranked by lower token id first

var<private> sel_len: u32;
var<private> sel_id_end: u32;

var<workgroup> h_count: array<atomic<u32>, WG>;
var<workgroup> h_lo: array<atomic<u32>, WG>;
var<workgroup> h_hi: array<atomic<u32>, WG>;
var<workgroup> sx_count: array<u32, WG>;   // inclusive suffix sums of the histogram
var<workgroup> sx_lo: array<u32, WG>;
var<workgroup> sx_hi: array<u32, WG>;
var<workgroup> pick: atomic<u32>;            // chosen bin + 1 (0 = none)

struct RadixState {
  pos: u32,           // bits >= pos of every candidate equal those of prefix
  prefix: u32,
  above: u32,         // candidates known to be larger than the current bin
  above_lo: u32,      // their mass, 64-bit fixed point
  above_hi: u32,
  target_lo: u32,     // mass to reach (top_p * total), fixed point
  target_hi: u32,
  count_ge: u32,      // candidates >= the answer once done
  none: u32,          // 1: fewer candidates than asked for
}
var<workgroup> radix_state: RadixState;

struct Selection {
  key: u32,           // answer: a key t such that the wanted set is {key >= t}
  above: u32,         // candidates with key > t when the select ran to the last bit, else 0
  count_ge: u32,      // candidates with key >= t
  none: u32,          // 1: fewer candidates than `need`; key = range_lo
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn ge64(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.y > b.y || (a.y == b.y && a.x >= b.x);
}

// Full 64-bit product of two u32, as (lo, hi), from 16-bit halves.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let lo = (p00 & 0xffffu) | (mid << 16u);
  let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>(lo, hi);
}

// floor(m * p24 / 2^24) for a 64-bit m below 2^50 and p24 <= 2^24.
fn scale_p24(m: vec2<u32>, p24: u32) -> vec2<u32> {
  let l = mul_wide(m.x, p24);
  let h = mul_wide(m.y, p24);
  let w1 = l.y + h.x;
  let w2 = h.y + select(0u, 1u, w1 < l.y);
  return vec2<u32>((l.x >> 24u) | (w1 << 8u), (w1 >> 24u) | (w2 << 8u));
}

// Inclusive suffix sums over the WG bins (Hillis-Steele, one bin per thread).
fn suffix_scan(t: u32) {
  sx_count[t] = atomicLoad(&h_count[t]);
  sx_lo[t] = atomicLoad(&h_lo[t]);
  sx_hi[t] = atomicLoad(&h_hi[t]);
  workgroupBarrier();
  for (var off = 1u; off < WG; off = off << 1u) {
    var c = sx_count[t];
    var m = vec2<u32>(sx_lo[t], sx_hi[t]);
    if (t + off < WG) {
      c += sx_count[t + off];
      m = add64(m, vec2<u32>(sx_lo[t + off], sx_hi[t + off]));
    }
    workgroupBarrier();
    sx_count[t] = c;
    sx_lo[t] = m.x;
    sx_hi[t] = m.y;
    workgroupBarrier();
  }
}

// Count mode (p24 == 0): the key of the need-th largest candidate.
// Mass mode (p24 > 0): the key of the first candidate, from the top, at which the cumulative mass
// exp(v - vmax) reaches p24 / 2^24 of the candidates' total mass (top_p).
// SEL_BY_VALUE candidates are keys >= range_lo (range_hi = key of the row max);
// SEL_TIE_INDEX candidates are elements whose key == match_key, keyed by ~id, with
// [range_lo, range_hi] = [~(sel_id_end - 1), 0xffffffff].
// Must be called from uniform control flow with uniform arguments.
fn radix_select(t: u32, mode: u32, match_key: u32, range_lo: u32, range_hi: u32, need: u32, p24: u32, vmax: f32) -> Selection {
  if (t == 0u) {
    // Candidates lie in [range_lo, range_hi], so they share the bits above the highest differing one.
    let diff = max(range_lo ^ range_hi, 1u);
    let pos = 32u - countLeadingZeros(diff);
    var st: RadixState;
    st.pos = pos;
    st.prefix = select(range_lo & ~((1u << pos) - 1u), 0u, pos == 32u);
    radix_state = st;
  }
  var st = workgroupUniformLoad(&radix_state);
  var first = true;
  loop {
    if (st.pos == 0u) { break; }
    let shift = select(st.pos - DIGIT_BITS, 0u, st.pos < DIGIT_BITS);
    let digit_mask = (1u << (st.pos - shift)) - 1u;
    atomicStore(&h_count[t], 0u);
    atomicStore(&h_lo[t], 0u);
    atomicStore(&h_hi[t], 0u);
    if (t == 0u) { atomicStore(&pick, 0u); }
    workgroupBarrier();
    for (var i = t; i < sel_len; i += WG) {
      let v = sel_value(i);
      let kv = order_key(v);
      var key = kv;
      if (mode == SEL_BY_VALUE) {
        if (kv < range_lo) { continue; }
      } else {
        if (kv != match_key) { continue; }
        key = ~sel_id(i);
      }
      if (st.pos < 32u && (key >> st.pos) != (st.prefix >> st.pos)) { continue; }
      let d = (key >> shift) & digit_mask;
      atomicAdd(&h_count[d], 1u);
      if (p24 != 0u) {
        let q = u32(exp(v - vmax) * 2147483648.0 + 0.5);
        if (q != 0u) {
          let old = atomicAdd(&h_lo[d], q);
          if (old > 0xffffffffu - q) { atomicAdd(&h_hi[d], 1u); }
        }
      }
    }
    workgroupBarrier();
    suffix_scan(t);
    // The target in mass mode: top_p of the total mass of all candidates (first round).
    var goal = vec2<u32>(st.target_lo, st.target_hi);
    if (first && p24 != 0u) { goal = scale_p24(vec2<u32>(sx_lo[0], sx_hi[0]), p24); }
    // The bin holding the target is the highest bin whose inclusive suffix reaches it.
    let incl_count = st.above + sx_count[t];
    let incl_mass = add64(vec2<u32>(st.above_lo, st.above_hi), vec2<u32>(sx_lo[t], sx_hi[t]));
    var reached = incl_count >= need;
    if (p24 != 0u) { reached = ge64(incl_mass, goal); }
    if (reached && atomicLoad(&h_count[t]) > 0u) { atomicMax(&pick, t + 1u); }
    workgroupBarrier();
    if (t == 0u) {
      let chosen = atomicLoad(&pick);
      var next = st;
      next.target_lo = goal.x;
      next.target_hi = goal.y;
      if (chosen == 0u) {
        // Fewer candidates than asked for (count mode, first round only).
        next.none = 1u;
        next.pos = 0u;
        next.prefix = range_lo;
        next.count_ge = sx_count[0];
        next.above = 0u;
      } else {
        let b = chosen - 1u;
        var excl_count = 0u;
        var excl_mass = vec2<u32>(0u, 0u);
        if (b + 1u < WG) {
          excl_count = sx_count[b + 1u];
          excl_mass = vec2<u32>(sx_lo[b + 1u], sx_hi[b + 1u]);
        }
        let in_bin = atomicLoad(&h_count[b]);
        next.prefix = (st.prefix & ~(digit_mask << shift)) | (b << shift);
        next.pos = shift;
        next.above = st.above + excl_count;
        let m = add64(vec2<u32>(st.above_lo, st.above_hi), excl_mass);
        next.above_lo = m.x;
        next.above_hi = m.y;
        next.count_ge = next.above + in_bin;
        // Settled early: the bin holds exactly the missing count, or a single element; every
        // candidate of the bin is then in the answer, and "key >= bin start" describes it --
        // raised to range_lo, because keys between the bin start and range_lo are not candidates.
        var settled = in_bin == 1u;
        if (p24 == 0u) { settled = settled || next.count_ge == need; }
        if (settled) {
          next.pos = 0u;
          next.above = 0u;
          if (mode == SEL_BY_VALUE) { next.prefix = max(next.prefix, range_lo); }
        }
      }
      radix_state = next;
    }
    st = workgroupUniformLoad(&radix_state);
    first = false;
  }
  return Selection(st.prefix, st.above, st.count_ge, st.none);
}

// ---- exact top-k gather ----

var<workgroup> top_n: atomic<u32>;
var<workgroup> top_id: array<u32, MAX_TOP>;
var<workgroup> top_key: array<u32, MAX_TOP>;
var<workgroup> sorted_id: array<u32, MAX_TOP>;
var<workgroup> sorted_key: array<u32, MAX_TOP>;

// The k largest elements of the current list (k <= MAX_TOP, k <= sel_len), ties by lower id,
// into sorted_id / sorted_key, best first. lower_bound: a key known to be <= the k-th largest
// (e.g. the k-th largest of some elements' values); high: key of the row max.
fn top_k_sorted(t: u32, k: u32, lower_bound: u32, high: u32) {
  let s = radix_select(t, SEL_BY_VALUE, 0u, lower_bound, high, k, 0u, 0.0);
  var tie_cut = 0xffffffffu;   // largest id taken among keys equal to s.key
  if (s.count_ge > k) {
    // More elements share the k-th value than fit: take the lowest ids among them.
    let ties = radix_select(t, SEL_TIE_INDEX, s.key, ~(sel_id_end - 1u), 0xffffffffu, k - s.above, 0u, 0.0);
    tie_cut = ~ties.key;
  }
  if (t == 0u) { atomicStore(&top_n, 0u); }
  workgroupBarrier();
  for (var i = t; i < sel_len; i += WG) {
    let key = order_key(sel_value(i));
    let id = sel_id(i);
    if (key > s.key || (key == s.key && id <= tie_cut)) {
      let at = atomicAdd(&top_n, 1u);
      if (at < MAX_TOP) {
        top_id[at] = id;
        top_key[at] = key;
      }
    }
  }
  workgroupBarrier();
  let n = min(atomicLoad(&top_n), MAX_TOP);
  if (t < n) {
    var rank = 0u;
    for (var j = 0u; j < n; j++) {
      let better = top_key[j] > top_key[t] || (top_key[j] == top_key[t] && top_id[j] < top_id[t]);
      rank += select(0u, 1u, better);
    }
    sorted_id[rank] = top_id[t];
    sorted_key[rank] = top_key[t];
  }
  workgroupBarrier();
}

// Inverse of order_key.
fn key_value(k: u32) -> f32 {
  if ((k & 0x80000000u) != 0u) { return bitcast<f32>(k & 0x7fffffffu); }
  return bitcast<f32>(~k);
}
