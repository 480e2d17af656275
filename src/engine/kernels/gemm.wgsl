// Tiled GEMM (operands in gemm-params.wgsl): a workgroup computes a BM x BN tile of C with
// (BM / T) x (BN / T) invocations, each owning a T x T block of outputs in registers. K is walked
// BK at a time: both operand tiles are staged in workgroup memory (k-major, so an invocation reads its
// T values of A and T values of B as vec4s), then every invocation does BK rank-1 updates of its
// block. Staging is coalesced along whichever dimension is contiguous in memory (A_KCONTIG,
// B_KCONTIG); packed weights stored [N, K] are staged 8 elements per load along K (B_VEC8, one
// vec4<u32> of 16-bit weights), packed weights stored [K, N] 8 per load along N (B_VEC8_N). Edges
// (M, N, K not multiples of the tile) load zeros and skip stores.
// The T x T block of an invocation is H x H groups of 4 x 4 (H = T / 4): rows ty * 4 + i of each
// BM / H band of the tile, columns tx * 4 + j of each BN / H band, so the invocations of a subgroup
// read neighbouring vec4s of As and Bs. T = 4 is the portable 64 x 64 tile; T = 8 the 128 x 128 one
// (twice the multiply-adds per value read from workgroup memory), whose staged rows are padded by
// PAD vec4s so the scalar staging stores of one k-column spread over the memory banks.
// Consts: BM, BN, BK, T (4 or 8), PAD, WG = (BM / T) * (BN / T), A_KCONTIG, B_KCONTIG, B_VEC8,
// B_VEC8_N, HAS_BIAS, ACCUM. Sections: `small` (T = 4) or `large` (T = 8), one of them kept (gemm.ts).

const H: u32 = T / 4u;
const TX: u32 = BN / T; // invocations along n
const AROW: u32 = BM / 4u + PAD; // vec4s per staged k-row of A
const BROW: u32 = BN / 4u + PAD;

var<workgroup> As: array<vec4<f32>, BK * AROW>; // As[k][m]
var<workgroup> Bs: array<vec4<f32>, BK * BROW>; // Bs[k][n]

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tx = lid % TX;
  let ty = lid / TX;
  var acc = array<vec4<f32>, T * H>(); // row r, column group g (of 4): acc[r * H + g]
  for (var k0 = 0u; k0 < P.K; k0 += BK) {
    for (var i = lid; i < BM * BK; i += WG) {
      var m: u32;
      var k: u32;
      if (A_KCONTIG) {
        m = i / BK;
        k = i % BK;
      } else {
        m = i % BM;
        k = i / BM;
      }
      var v = 0.0;
      if (m0 + m < P.M && k0 + k < P.K) {
        v = a_at(m0 + m, k0 + k);
      }
      As[k * AROW + m / 4u][m % 4u] = v;
    }
    if (B_VEC8) {
      // Packed weights stored [N, K]: 8 consecutive k of one row per load (rows are 16-byte aligned
      // and zero-padded to a multiple of 8, so a group never straddles K's end).
      let kpad = (P.K + 7u) & ~7u;
      for (var i = lid; i < BN * BK / 8u; i += WG) {
        let n = i / (BK / 8u);
        let k = 8u * (i % (BK / 8u));
        var w = mat2x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0));
        if (n0 + n < P.N && k0 + k < kpad) {
          w = B_load8(P.b_off + (n0 + n) * P.b_sn + k0 + k);
        }
        for (var e = 0u; e < 8u; e++) {
          Bs[(k + e) * BROW + n / 4u][n % 4u] = w[e / 4u][e % 4u];
        }
      }
    } else if (B_VEC8_N) {
      // Packed weights stored [K, N] (the backward's dX = dY W, W [out, in]): 8 consecutive n of
      // one row k per load. n0 + n is a multiple of 8 and rows are 16-byte aligned and zero-padded
      // to a multiple of 8 elements, so a group never straddles a row's end; columns past N are
      // staged but never stored.
      let npad = (P.N + 7u) & ~7u;
      for (var i = lid; i < BK * BN / 8u; i += WG) {
        let k = i / (BN / 8u);
        let n = 8u * (i % (BN / 8u));
        var w = mat2x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0));
        if (k0 + k < P.K && n0 + n < npad) {
          w = B_load8(P.b_off + (k0 + k) * P.b_sk + n0 + n);
        }
        Bs[k * BROW + n / 4u] = w[0];
        Bs[k * BROW + n / 4u + 1u] = w[1];
      }
    } else {
      for (var i = lid; i < BN * BK; i += WG) {
        var n: u32;
        var k: u32;
        if (B_KCONTIG) {
          n = i / BK;
          k = i % BK;
        } else {
          n = i % BN;
          k = i / BN;
        }
        var v = 0.0;
        if (n0 + n < P.N && k0 + k < P.K) {
          v = b_at(k0 + k, n0 + n);
        }
        Bs[k * BROW + n / 4u][n % 4u] = v;
      }
    }
    workgroupBarrier();
    // Written out with constant indices: loops over H with arrays indexed by their counters kept
    // the accumulators out of registers on SwiftShader (6x slower GEMMs).
    for (var k = 0u; k < BK; k++) {
      let a0 = As[k * AROW + ty];
      let b0 = Bs[k * BROW + tx];
#ifdef_small
      acc[0] += a0.x * b0;
      acc[1] += a0.y * b0;
      acc[2] += a0.z * b0;
      acc[3] += a0.w * b0;
#endif_small
#ifdef_large
      let a1 = As[k * AROW + BM / 8u + ty];
      let b1 = Bs[k * BROW + BN / 8u + tx];
      acc[0] += a0.x * b0;
      acc[1] += a0.x * b1;
      acc[2] += a0.y * b0;
      acc[3] += a0.y * b1;
      acc[4] += a0.z * b0;
      acc[5] += a0.z * b1;
      acc[6] += a0.w * b0;
      acc[7] += a0.w * b1;
      acc[8] += a1.x * b0;
      acc[9] += a1.x * b1;
      acc[10] += a1.y * b0;
      acc[11] += a1.y * b1;
      acc[12] += a1.z * b0;
      acc[13] += a1.z * b1;
      acc[14] += a1.w * b0;
      acc[15] += a1.w * b1;
#endif_large
    }
    workgroupBarrier();
  }
#ifdef_small
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + ty * 4u + i;
    if (m < P.M) {
      for (var j = 0u; j < 4u; j++) {
        let n = n0 + tx * 4u + j;
        if (n < P.N) {
          store_c(m, n, acc[i][j]);
        }
      }
    }
  }
#endif_small
#ifdef_large
  for (var r = 0u; r < 8u; r++) {
    let m = m0 + (r / 4u) * (BM / 2u) + ty * 4u + r % 4u;
    if (m < P.M) {
      for (var c = 0u; c < 8u; c++) {
        let n = n0 + (c / 4u) * (BN / 2u) + tx * 4u + c % 4u;
        if (n < P.N) {
          store_c(m, n, acc[r * 2u + c / 4u][c % 4u]);
        }
      }
    }
  }
#endif_large
}
