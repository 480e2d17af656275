// Tiled GEMM (operands in gemm-params.wgsl): a workgroup computes a BM x BN tile of C with
// (BM / TM) x (BN / TN) invocations, each owning a TM x TN block of outputs in registers. K is walked
// BK at a time: both operand tiles are staged in workgroup memory (k-major, so an invocation reads its
// TM values of A and TN values of B as vec4s), then every invocation does BK rank-1 updates of its
// block. Staging is coalesced along whichever dimension is contiguous in memory (A_KCONTIG,
// B_KCONTIG); packed weights stored [N, K] are staged 8 elements per load along K (B_VEC8, one
// vec4<u32> of 16-bit weights), packed weights stored [K, N] 8 per load along N (B_VEC8_N). Edges
// (M, N, K not multiples of the tile) load zeros and skip stores.
// Consts: BM, BN, BK, TM = TN = 4, WG = (BM / 4) * (BN / 4), A_KCONTIG, B_KCONTIG, B_VEC8, B_VEC8_N,
// HAS_BIAS, ACCUM.

const TM: u32 = 4u;
const TN: u32 = 4u;
const TX: u32 = BN / TN; // invocations along n

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>; // As[k][m]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>; // Bs[k][n]

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tx = lid % TX;
  let ty = lid / TX;
  var acc = array<vec4<f32>, TM>();
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
      As[(k * BM + m) / 4u][m % 4u] = v;
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
          Bs[((k + e) * BN + n) / 4u][n % 4u] = w[e / 4u][e % 4u];
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
        Bs[(k * BN + n) / 4u] = w[0];
        Bs[(k * BN + n) / 4u + 1u] = w[1];
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
        Bs[(k * BN + n) / 4u][n % 4u] = v;
      }
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let a = As[k * (BM / 4u) + ty];
      let b = Bs[k * (BN / 4u) + tx];
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + ty * TM + i;
    if (m < P.M) {
      for (var j = 0u; j < TN; j++) {
        let n = n0 + tx * TN + j;
        if (n < P.N) {
          store_c(m, n, acc[i][j]);
        }
      }
    }
  }
}
