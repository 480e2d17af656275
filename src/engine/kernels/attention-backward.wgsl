// Attention backward, tiled (FlashAttention-2 style; the math is in attention-backward-common.wgsl).
// P is recomputed tile by tile from q, k and the forward's lse; nothing of size T x T is stored and
// no float atomics are used: dq and (dk, dv) are two dispatches, each output owned by one thread,
// each sum taken in a fixed order, so results are deterministic.
//
// dq: workgroup (query tile, kv head h, row b), the forward's shape: BR = WG / LANES query rows
//   ((token, head-in-group) pairs of one sequence, so the G heads of h share each staged K/V tile),
//   LANES threads per row holding DPT4 vec4s of q, dO and the dq accumulator. Per tile of BK keys:
//   stage K and V, lane partials of s = q . k and dP = dO . v, summed through workgroup memory,
//   then dq += P (dP - D) k.
// dk, dv: workgroup (key tile, kv head h, row b): BKV = WG / LANES keys of the row's own tokens,
//   LANES threads per key holding its k, v and the dk, dv accumulators. Queries that can see the
//   tile (tokens from its first key on, all G heads) are staged BQ rows at a time with their lse
//   and D; per query the same lane partials, then dv += P dO, dk += P (dP - D) q.
// Consts (besides HS, NKV, G): WG, LANES, DPT4 = HS / 4 / LANES, BK, BQ, PART_K, PART_Q
// (lane-partial slots: BK * WG and BQ * WG, or 1 when LANES = 1).

const BR: u32 = WG / LANES;


// dq pass
var<workgroup> k_s: array<vec4<f32>, BK * HS4>;   // [BK][HS/4]
var<workgroup> v_s: array<vec4<f32>, BK * HS4>;   // [BK][HS/4]
var<workgroup> pk_s: array<vec2<f32>, PART_K>;    // [BK][WG] lane partials (s, dP)

// dk, dv pass
var<workgroup> q_s: array<vec4<f32>, BQ * HS4>;   // [BQ][HS/4]
var<workgroup> do_s: array<vec4<f32>, BQ * HS4>;  // [BQ][HS/4]
var<workgroup> st_s: array<vec2<f32>, BQ>;        // (lse, D) of each staged query row
var<workgroup> qp_s: array<u32, BQ>;              // its position + 1, 0 past the end
var<workgroup> pq_s: array<vec2<f32>, PART_Q>;    // [BQ][WG] lane partials (s, dP)

@compute @workgroup_size(WG)
fn dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let h = wid.y;
  stage_row(wid.z, tid);
  let row = workgroupUniformLoad(&row_s);
  let nRows = row.z * G;
  let r0 = wid.x * BR;
  if (r0 >= nRows) {
    return; // a shorter row of the batch: the grid is sized for the longest
  }
  let rr = tid / LANES;
  let lane = tid % LANES;
  let f = min(r0 + rr, nRows - 1u); // rows past the end mirror the last one and write nothing
  let live = r0 + rr < nRows;
  let tok = row.w + f / G;
  let qi = tok * NH + h * G + f % G; // (token, query head) index
  let qpos = row.y + f / G;
  let maxPos = row.y + (min(r0 + BR, nRows) - 1u) / G; // last key any row of the tile sees
  let minPos = first_key(row.y + r0 / G, params.window); // first key any row of the tile sees

  var qr = array<vec4<f32>, DPT4>();
  var dor = array<vec4<f32>, DPT4>();
  var acc = array<vec4<f32>, DPT4>();
  for (var i = 0u; i < DPT4; i++) {
    qr[i] = q[qi * HS4 + lane + i * LANES] * params.scale;
    dor[i] = dout[qi * HS4 + lane + i * LANES];
  }
  let lse = stats[qi];
  let D = stats[params.T * NH + qi];

  let nTiles = maxPos / BK + 1u;
  for (var kt = minPos / BK; kt < nTiles; kt++) {
    let k0 = kt * BK;
    stage_kv_tile(row.x, h, k0, minPos, maxPos, tid); // kv-tile.wgsl
    workgroupBarrier();

    var s = array<f32, BK>();
    var dp = array<f32, BK>();
    for (var j = 0u; j < BK; j++) {
      var a = 0.0;
      var c = 0.0;
      for (var i = 0u; i < DPT4; i++) {
        a += dot(qr[i], k_s[j * HS4 + lane + i * LANES]);
        c += dot(dor[i], v_s[j * HS4 + lane + i * LANES]);
      }
      s[j] = a;
      dp[j] = c;
    }
    if (LANES > 1u) {
      for (var j = 0u; j < BK; j++) {
        pk_s[j * WG + tid] = vec2<f32>(s[j], dp[j]);
      }
      workgroupBarrier();
      for (var j = 0u; j < BK; j++) {
        var sum = vec2<f32>(0.0);
        for (var ln = 0u; ln < LANES; ln++) {
          sum += pk_s[j * WG + rr * LANES + ln];
        }
        s[j] = sum.x;
        dp[j] = sum.y;
      }
    }
    for (var j = 0u; j < BK; j++) {
      if (sees(qpos, k0 + j)) {
        let ds = exp(s[j] - lse) * (dp[j] - D);
        for (var i = 0u; i < DPT4; i++) {
          acc[i] += ds * k_s[j * HS4 + lane + i * LANES];
        }
      }
    }
    workgroupBarrier(); // the next tile overwrites k_s, v_s, pk_s
  }

  if (live) {
    for (var i = 0u; i < DPT4; i++) {
      dqkv[tok * QKV4 + (qi % NH) * HS4 + lane + i * LANES] = acc[i] * params.scale;
    }
  }
}

@compute @workgroup_size(WG)
fn dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let h = wid.y;
  stage_row(wid.z, tid);
  let row = workgroupUniformLoad(&row_s);
  let nKeys = row.z;
  let kt0 = wid.x * BR; // BKV = BR keys per workgroup
  if (kt0 >= nKeys) {
    return;
  }
  let kk = tid / LANES;
  let lane = tid % LANES;
  let kt = min(kt0 + kk, nKeys - 1u);
  let live = kt0 + kk < nKeys;
  let kpos = row.y + kt;
  let at = kv_index(row.x, kpos, h, NKV, HS4, params.maxBlocksPerSeq);

  var kr = array<vec4<f32>, DPT4>();
  var vr = array<vec4<f32>, DPT4>();
  var dk = array<vec4<f32>, DPT4>();
  var dv = array<vec4<f32>, DPT4>();
  for (var i = 0u; i < DPT4; i++) {
    kr[i] = kCache[at + lane + i * LANES] * params.scale;
    vr[i] = vCache[at + lane + i * LANES];
  }

  // Query rows f = t * G + g of this sequence; those before the tile's first key see none of it, nor
  // do those a window or more past its last key.
  var nRows = nKeys * G;
  if (params.window > 0u) {
    nRows = min(nRows, (min(kt0 + BR, nKeys) - 1u + params.window) * G);
  }
  for (var f0 = kt0 * G; f0 < nRows; f0 += BQ) {
    for (var e = tid; e < BQ * HS4; e += WG) {
      let f = f0 + e / HS4;
      if (f < nRows) {
        let qi = (row.w + f / G) * NH + h * G + f % G;
        q_s[e] = q[qi * HS4 + e % HS4];
        do_s[e] = dout[qi * HS4 + e % HS4];
      } else {
        q_s[e] = vec4<f32>(0.0);
        do_s[e] = vec4<f32>(0.0);
      }
    }
    for (var e = tid; e < BQ; e += WG) {
      let f = f0 + e;
      if (f < nRows) {
        let qi = (row.w + f / G) * NH + h * G + f % G;
        st_s[e] = vec2<f32>(stats[qi], stats[params.T * NH + qi]);
        qp_s[e] = row.y + f / G + 1u;
      } else {
        st_s[e] = vec2<f32>(0.0);
        qp_s[e] = 0u;
      }
    }
    workgroupBarrier();

    var s = array<f32, BQ>();
    var dp = array<f32, BQ>();
    for (var r = 0u; r < BQ; r++) {
      var a = 0.0;
      var c = 0.0;
      for (var i = 0u; i < DPT4; i++) {
        a += dot(kr[i], q_s[r * HS4 + lane + i * LANES]);
        c += dot(vr[i], do_s[r * HS4 + lane + i * LANES]);
      }
      s[r] = a;
      dp[r] = c;
    }
    if (LANES > 1u) {
      for (var r = 0u; r < BQ; r++) {
        pq_s[r * WG + tid] = vec2<f32>(s[r], dp[r]);
      }
      workgroupBarrier();
      for (var r = 0u; r < BQ; r++) {
        var sum = vec2<f32>(0.0);
        for (var ln = 0u; ln < LANES; ln++) {
          sum += pq_s[r * WG + kk * LANES + ln];
        }
        s[r] = sum.x;
        dp[r] = sum.y;
      }
    }
    for (var r = 0u; r < BQ; r++) {
      if (qp_s[r] > kpos && sees(qp_s[r] - 1u, kpos)) { // causal (qp_s 0 past the end), and in the window
        let st = st_s[r];
        let pr = exp(s[r] - st.x);
        let ds = pr * (dp[r] - st.y);
        for (var i = 0u; i < DPT4; i++) {
          dv[i] += pr * do_s[r * HS4 + lane + i * LANES];
          dk[i] += ds * q_s[r * HS4 + lane + i * LANES];
        }
      }
    }
    workgroupBarrier(); // the next query tile overwrites the staged rows
  }

  if (live) {
    let dst = (row.w + kt) * QKV4 + lane;
    for (var i = 0u; i < DPT4; i++) {
      dqkv[dst + (NH + h) * HS4 + i * LANES] = dk[i] * params.scale;
      dqkv[dst + (NH + NKV + h) * HS4 + i * LANES] = dv[i];
    }
  }
}
