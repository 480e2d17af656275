// Quantize on load, Q4_K: rows of f32 / f16 / bf16 values (X, read through its packed accessors) ->
// Q4_K super-blocks (144 bytes per 256 values) in a PackedMatrix chunk (OUT), by the algorithm of
// model/quant/quantize.ts quantizeQ4_K, in f32 (the reference sums in double: a block may differ where two
// candidate fits are equal within rounding). One invocation per sub-block of 32 values, a workgroup
// per 8 super-blocks:
// 1. each invocation fits its sub-block's scale and min (weighted least squares over 22 grid
//    spacings, weights |x| + rms, as llama.cpp's make_qkx2_quants), with the line fitted and each
//    candidate's error summed in forms that do not cancel in f32;
// 2. the super-block's 8 fits meet in workgroup memory: f16 d and dmin (rounded exactly,
//    quantize-common.wgsl), 6-bit codes, and each invocation's 32 quants against the stored values;
// 3. the 36 words of each super-block are written by its 8 invocations, 4 or 5 words each.

const WG: u32 = 64u;
const Q4_MAX: f32 = 15.0;

var<workgroup> fit_scale: array<f32, WG>;
var<workgroup> fit_min: array<f32, WG>;
// 32 nibbles per sub-block, 8 to a word.
var<workgroup> quants: array<u32, 256>; // WG * 4

// The 6-bit code of v against the block's largest (model/quant/quantize.ts `code`: Math.round, clamped).
fn code6(v: f32, vmax: f32) -> u32 {
  if (vmax <= 0.0) {
    return 0u;
  }
  return u32(clamp(floor(63.0 / vmax * v + 0.5), 0.0, 63.0));
}

// v's step on the grid of spacing 1 / inv from lo, at most Q4_MAX; hi's is `top` (see the fit).
fn grid_q(v: f32, lo: f32, hi: f32, inv: f32, top: f32) -> f32 {
  return select(min(floor(inv * (v - lo) + 0.5), Q4_MAX), top, v == hi);
}

// Nibbles n..n+3 of a sub-block (4 bits each in `packed`) spread to the low nibbles of 4 bytes.
fn spread(packed: u32) -> u32 {
  return (packed & 0xfu) | ((packed & 0xf0u) << 4u) | ((packed & 0xf00u) << 8u) | ((packed & 0xf000u) << 12u);
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let per_row = P.cols / 32u;
  let s = (wid.x + wid.y * nwg.x) * WG + lid;
  // Rows are whole super-blocks, so a super-block is live or not as a whole; the others
  // still reach the barriers.
  let live = s < P.rows * per_row;
  let r = s / per_row;
  let c0 = (s % per_row) * 32u;
  var x: array<f32, 32>;
  if (live) {
    for (var k = 0u; k < 32u; k += 8u) {
      let v = X_load8(r * P.cols + c0 + k);
      for (var j = 0u; j < 4u; j++) {
        x[k + j] = v[0][j];
        x[k + 4u + j] = v[1][j];
      }
    }
  }

  // 1. The fit (model/quant/quantize.ts fitSubBlock), x ~ scale * q + offset, offset <= 0.
  var sq = 0.0;
  for (var i = 0u; i < 32u; i++) {
    sq += x[i] * x[i];
  }
  let rms = sqrt(sq / 32.0);
  var lo = x[0];
  var hi = x[0];
  var sum_w = 0.0;
  var sum_x = 0.0;
  for (var i = 0u; i < 32u; i++) {
    let w = rms + abs(x[i]);
    lo = min(lo, x[i]);
    hi = max(hi, x[i]);
    sum_w += w;
    sum_x += w * x[i];
  }
  lo = min(lo, 0.0);
  var best_scale = 0.0;
  var best_offset = lo;
  if (hi != lo) {
    var best_err = 3.4e38;
    var prev = vec3<f32>(-1.0);
    for (var g = -1; g <= 20; g++) {
      let steps = select(Q4_MAX - 1.0 + 0.1 * f32(g), Q4_MAX, g < 0);
      let inv = steps / (hi - lo);
      // hi lands on `steps` exactly (a tie for 14.5): rounded from steps, as the reference does.
      let top = min(floor(steps + 0.5), Q4_MAX);
      var sum_l = 0.0;
      var sum_l2 = 0.0;
      var sum_xl = 0.0;
      for (var i = 0u; i < 32u; i++) {
        let q = grid_q(x[i], lo, hi, inv, top);
        let wq = (rms + abs(x[i])) * q;
        sum_l += wq;
        sum_l2 += wq * q;
        sum_xl += wq * x[i];
      }
      var scale = 1.0 / inv;
      var offset = lo;
      if (g >= 0) {
        // Neighbouring spacings often round every value alike: the same sums are the same refit
        // (the reference's fit is a function of them), and a repeat never wins, so it is skipped.
        if (sum_l == prev.x && sum_l2 == prev.y && sum_xl == prev.z) {
          continue;
        }
        prev = vec3<f32>(sum_l, sum_l2, sum_xl);
        // The least-squares line through (q, x), centred on the weighted means: the reference's
        // det = Σw·Σwq² − (Σwq)² cancels in f32 when one weight dominates (an outlier).
        let mean_q = sum_l / sum_w;
        let mean_x = sum_x / sum_w;
        var var_q = 0.0;
        var cov = 0.0;
        for (var i = 0u; i < 32u; i++) {
          let dq = grid_q(x[i], lo, hi, inv, top) - mean_q;
          let wdq = (rms + abs(x[i])) * dq;
          var_q += wdq * dq;
          cov += wdq * (x[i] - mean_x);
        }
        if (!(var_q > 0.0)) {
          continue;
        }
        scale = cov / var_q;
        offset = mean_x - scale * mean_q;
        if (offset > 0.0) {
          offset = 0.0;
          scale = sum_xl / sum_l2;
        }
      }
      // sum w (scale q + offset - x)^2, summed term by term: the reference expands it into its sums,
      // which cancel too much in f32 for a sub-block with an outlier to rank the candidates.
      var err = 0.0;
      for (var i = 0u; i < 32u; i++) {
        let q = grid_q(x[i], lo, hi, inv, top);
        let e = scale * q + offset - x[i];
        err += (rms + abs(x[i])) * e * e;
      }
      if (err < best_err) {
        best_err = err;
        best_scale = scale;
        best_offset = offset;
      }
    }
  }
  fit_scale[lid] = best_scale;
  fit_min[lid] = -best_offset;
  workgroupBarrier();

  // 2. The super-block's scales: f16 d, dmin, the 6-bit codes of all 8, then this sub-block's quants.
  let base = lid & ~7u;
  let j = lid & 7u;
  var max_scale = 0.0;
  var max_min = 0.0;
  for (var k = 0u; k < 8u; k++) {
    max_scale = max(max_scale, fit_scale[base + k]);
    max_min = max(max_min, fit_min[base + k]);
  }
  let db = f16_of_quotient(max_scale, 63.0);
  let dmb = f16_of_quotient(max_min, 63.0);
  var sc: array<u32, 8>;
  var mn: array<u32, 8>;
  for (var k = 0u; k < 8u; k++) {
    sc[k] = code6(fit_scale[base + k], max_scale);
    mn[k] = code6(fit_min[base + k], max_min);
  }
  let qstep = f16_value(db) * f32(sc[j]);
  let mins = f16_value(dmb) * f32(mn[j]);
  for (var w = 0u; w < 4u; w++) {
    var packed = 0u;
    if (qstep > 0.0) {
      for (var i = 0u; i < 8u; i++) {
        packed |= u32(round_quotient(x[w * 8u + i] + mins, qstep, Q4_MAX)) << (4u * i);
      }
    }
    quants[lid * 4u + w] = packed;
  }
  workgroupBarrier();
  if (!live) {
    return;
  }

  // 3. Words 4 + 8p + 4h .. +3 hold bytes 16h..16h+15 of sub-block pair p = j / 2, h = j % 2:
  // sub-block 2p in the low nibbles, 2p + 1 in the high ones. Words 0..3 (d, dmin, the 12 scale
  // bytes) come from invocations 0..3.
  let sb = s / 8u; // the super-block within the slice
  let at = P.out_off + r * P.out_stride + ((sb % (per_row / 8u)) * 36u);
  let p = j / 2u;
  let h = j % 2u;
  for (var w = 0u; w < 4u; w++) {
    let n = h * 16u + w * 4u; // first nibble
    let lo_q = (quants[(base + 2u * p) * 4u + n / 8u] >> (4u * (n % 8u))) & 0xffffu;
    let hi_q = (quants[(base + 2u * p + 1u) * 4u + n / 8u] >> (4u * (n % 8u))) & 0xffffu;
    OUT[at + 4u + 8u * p + 4u * h + w] = spread(lo_q) | (spread(hi_q) << 4u);
  }
  if (j == 0u) {
    OUT[at] = db | (dmb << 16u);
  } else if (j < 4u) {
    // Scale bytes 4(j-1)..4(j-1)+3 (model/quant/quantize.ts quantizeQ4_K's 6-bit packing).
    var word = 0u;
    for (var b = 0u; b < 4u; b++) {
      var v = 0u;
      if (j == 1u) {
        v = sc[b] | ((sc[b + 4u] >> 4u) << 6u);
      } else if (j == 2u) {
        v = mn[b] | ((mn[b + 4u] >> 4u) << 6u);
      } else {
        v = (sc[b + 4u] & 0xfu) | ((mn[b + 4u] & 0xfu) << 4u);
      }
      word |= v << (8u * b);
    }
    OUT[at + j] = word;
  }
}
