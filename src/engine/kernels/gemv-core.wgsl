// GEMV core for decode (a skinny GEMM: B <= 64 activation rows): each workgroup owns G = TR * RPT
// weight rows and BB activation rows. Activations are staged in workgroup memory KT at a time
// (computed by the kernel's stage_x hook: a plain load, or a residual plus pending partial sums, or an
// attention merge), each weight row is read once, 8 elements per load, by the TK invocations of its
// team, and dotted with all BB staged rows; the team's partial sums are reduced by group_sum.
//
// Consts: WG, TK, TR = WG / TK, RPT, BB, KT (multiple of 8), LOADS (loads per row in flight), NORM (fold an RMSNorm into the load:
// sum of squares accumulated while staging, weight applied to the staged value, rstd applied by the
// caller: y = rstd * sum_k W[n,k] * w[k] * h[k]).
// Hooks the kernel defines: stage_x(b, k) -> f32, norm_w(k) -> f32, row_start(j) -> u32 (element offset
// of row j's first weight, a multiple of 8), row_valid(j) -> bool, and the binding W with W_load8.
// Staging writes 4 consecutive activations per invocation (one vec4 store).

const G: u32 = TR * RPT;

// The norm weight of elements k .. k + 3 (0 beyond K).
fn norm_w4(k: u32, K: u32) -> vec4<f32> {
  var w = vec4<f32>(0.0);
  for (var e = 0u; e < 4u; e++) {
    if (k + e < K) {
      w[e] = norm_w(k + e);
    }
  }
  return w;
}

var<workgroup> xs: array<vec4<f32>, BB * KT / 4u>;

// Eight weights against the staged activations at xs[xi], xs[xi + 1].
fn dot8(w: mat2x4<f32>, xi: u32) -> f32 {
  return dot(w[0], xs[xi]) + dot(w[1], xs[xi + 1u]);
}

// Row j's eight weights at group g of the chunk from k0, or zeros past the chunk or for a row not in use.
fn load_row8(valid: bool, j: u32, k0: u32, g: u32, g8: u32) -> mat2x4<f32> {
  if (valid && g < g8) {
    return W_load8(row_start(j) + k0 + 8u * g);
  }
  return mat2x4<f32>();
}
var<workgroup> ys: array<f32, G * BB>;
var<workgroup> rstd: array<f32, BB>;

// Fills ys[j * BB + b] = sum_k W[row j, k] * x[b, k] for the group's rows j, and rstd[b] with NORM.
// nb: batch rows in use (<= BB); K: elements per row. `restage`: false when a previous call of this
// workgroup staged the same activations and they fit one chunk (K <= KT): kernels that walk several
// groups of rows (the fused decode kernels) stage once. Uniform control flow only.
fn gemv_group(lid: u32, K: u32, nb: u32, eps: f32, restage: bool) {
  let team = lid / TK;
  let kt = lid % TK;
  let kpad = (K + 7u) & ~7u;
  var acc = array<array<f32, BB>, RPT>(); // explicit: SwiftShader does not re-zero arrays of inlined calls in loops
  var sq = array<f32, BB>();
  for (var k0 = 0u; k0 < kpad; k0 += KT) {
    let klen = min(KT, kpad - k0);
    workgroupBarrier(); // the previous chunk has been read
    let stage = restage || kpad > KT;
    for (var b = 0u; b < BB && stage; b++) {
      for (var q = lid; q < klen / 4u; q += WG) {
        var v = vec4<f32>(0.0);
        for (var e = 0u; e < 4u; e++) {
          let k = k0 + 4u * q + e;
          if (b < nb && k < K) {
            v[e] = stage_x(b, k);
          }
        }
        if (NORM) {
          sq[b] += dot(v, v);
          v *= vec4<f32>(norm_w4(k0 + 4u * q, K));
        }
        xs[b * (KT / 4u) + q] = v;
      }
    }
    workgroupBarrier();
    let g8 = klen / 8u;
    if (LOADS == 1u) {
      for (var g = kt; g < g8; g += TK) {
        for (var r = 0u; r < RPT; r++) {
          let j = r * TR + team;
          if (row_valid(j)) {
            let w = W_load8(row_start(j) + k0 + 8u * g);
            for (var b = 0u; b < BB; b++) {
              acc[r][b] += dot8(w, b * (KT / 4u) + 2u * g);
            }
          }
        }
      }
    } else {
      // Four loads of a row issued before any is used, then added in the same order as one at a
      // time: a GEMV at decode is bound by the loads each invocation keeps in flight (on an H200 one
      // at a time streamed ~7 GB/s per workgroup, docs/performance.md "An H200 beside the peers").
      // Named values, not an array indexed by a counter: that kept them out of registers on
      // SwiftShader's compiler.
      for (var g0 = kt; g0 < g8; g0 += 4u * TK) {
        for (var r = 0u; r < RPT; r++) {
          let j = r * TR + team;
          let valid = row_valid(j);
          let w0 = load_row8(valid, j, k0, g0, g8);
          let w1 = load_row8(valid, j, k0, g0 + TK, g8);
          let w2 = load_row8(valid, j, k0, g0 + 2u * TK, g8);
          let w3 = load_row8(valid, j, k0, g0 + 3u * TK, g8);
          if (valid) {
            for (var b = 0u; b < BB; b++) {
              let xi = b * (KT / 4u) + 2u * g0;
              acc[r][b] += dot8(w0, xi);
              if (g0 + TK < g8) {
                acc[r][b] += dot8(w1, xi + 2u * TK);
              }
              if (g0 + 2u * TK < g8) {
                acc[r][b] += dot8(w2, xi + 4u * TK);
              }
              if (g0 + 3u * TK < g8) {
                acc[r][b] += dot8(w3, xi + 6u * TK);
              }
            }
          }
        }
      }
    }
  }
  for (var r = 0u; r < RPT; r++) {
    let s = group_sum(lid, acc[r], TK);
    if (kt == 0u) {
      for (var b = 0u; b < BB; b++) {
        ys[(r * TR + team) * BB + b] = s[b];
      }
    }
  }
  if (NORM && (restage || kpad > KT)) {
    let t = group_sum(lid, sq, WG);
    if (lid == 0u) {
      for (var b = 0u; b < BB; b++) {
        rstd[b] = inverseSqrt(t[b] / f32(K) + eps);
      }
    }
  }
  workgroupBarrier();
}
