// LoRA weight gradients, split-K and deterministic (no float atomics): for each problem p of the
// dispatch (a LoRA matrix of one module),
//   OUT[p](m, n) += alpha_p * sum_t X(t, m) Y(t, n),   X(t, m) = X[x_off + t ldx + m], Y likewise,
// i.e. X^T Y with the token axis t as the reduction: dB^T = s U^T g (stored transposed into
// B [out, r]) and dA = (s g B)^T x. The token axis is long and the outputs are small (r x in), so
// the K range is split over workgroups: each writes its partial tile to PART, and `reduce` adds
// the partials in split order into OUT. A problem with one split adds straight into OUT.
//
// Tile: BM = 16 rows (the small side: r or a group's stacked r) x BN = 64 columns, BK = 32 tokens
// staged in workgroup memory (10 KiB), 64 invocations with 4 x 4 outputs each in registers.
// Workgroups are listed problem by problem: problem p owns workgroups [first, first + tilesM
// tilesN splits), ordered (split, tile m, tile n).

const BM: u32 = 16u;
const BN: u32 = 64u;
const BK: u32 = 32u;
const WG: u32 = 64u;

var<workgroup> Xs: array<vec4<f32>, BK * BM / 4u>; // Xs[k][m]
var<workgroup> Ys: array<vec4<f32>, BK * BN / 4u>; // Ys[k][n]

fn out_index(pr: Problem, m: u32, n: u32) -> u32 {
  if (pr.transposed == 1u) {
    return pr.out_off + n * pr.ldo + m;
  }
  return pr.out_off + m * pr.ldo + n;
}

// The problem that owns flat index w (problems are listed in order of `first`).
fn problem_of(w: u32) -> u32 {
  var p = 0u;
  for (var i = 1u; i < P.count; i++) {
    if (w >= P.problems[i].first) {
      p = i;
    }
  }
  return p;
}

@compute @workgroup_size(WG)
fn partial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = wid.x + wid.y * nwg.x;
  // w is uniform across the workgroup, so the barriers below stay in uniform control flow.
  if (w >= P.total) {
    return;
  }
  let pr = P.problems[problem_of(w)];
  let tilesM = (pr.M + BM - 1u) / BM;
  let tilesN = (pr.N + BN - 1u) / BN;
  let local = w - pr.first;
  let split = local / (tilesM * tilesN);
  let tile = local % (tilesM * tilesN);
  let m0 = (tile / tilesN) * BM;
  let n0 = (tile % tilesN) * BN;
  let kBegin = split * pr.kps;
  let kEnd = min(pr.K, kBegin + pr.kps);
  let tm = lid / (BN / 4u); // 0..3: rows tm*4 .. tm*4+3
  let tn = lid % (BN / 4u); // 0..15: columns tn*4 .. tn*4+3
  var acc = array<vec4<f32>, 4>();
  for (var k0 = kBegin; k0 < kEnd; k0 += BK) {
    for (var i = lid; i < BK * BM; i += WG) {
      let k = i / BM;
      let m = i % BM;
      var v = 0.0;
      if (k0 + k < kEnd && m0 + m < pr.M) {
        v = X[pr.x_off + (k0 + k) * pr.ldx + m0 + m];
      }
      Xs[(k * BM + m) / 4u][m % 4u] = v;
    }
    for (var i = lid; i < BK * BN; i += WG) {
      let k = i / BN;
      let n = i % BN;
      var v = 0.0;
      if (k0 + k < kEnd && n0 + n < pr.N) {
        v = Y[pr.y_off + (k0 + k) * pr.ldy + n0 + n];
      }
      Ys[(k * BN + n) / 4u][n % 4u] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let a = Xs[k * (BM / 4u) + tm];
      let b = Ys[k * (BN / 4u) + tn];
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + tm * 4u + i;
    if (m >= pr.M) {
      continue;
    }
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + tn * 4u + j;
      if (n >= pr.N) {
        continue;
      }
      if (pr.splits == 1u) {
        let o = out_index(pr, m, n);
        OUT[o] += pr.alpha * acc[i][j];
      } else {
        PART[pr.part_off + (split * pr.M + m) * pr.N + n] = acc[i][j];
      }
    }
  }
}

// Adds the partials of every split problem into OUT, split 0 first: one invocation per output.
@compute @workgroup_size(256)
fn reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let e = gid.x + gid.y * nwg.x * 256u;
  if (e >= P.total) {
    return;
  }
  let pr = P.problems[problem_of(e)];
  let local = e - pr.first;
  let m = local / pr.N;
  let n = local % pr.N;
  var s = 0.0;
  for (var k = 0u; k < pr.splits; k++) {
    s += PART[pr.part_off + (k * pr.M + m) * pr.N + n];
  }
  let o = out_index(pr, m, n);
  OUT[o] += pr.alpha * s;
}
