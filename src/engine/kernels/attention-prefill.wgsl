// Prefill attention over the paged KV cache, FlashAttention-2 style (tiled, online softmax in f32).
// Queries of several sequences (batch rows; row b's tokens sit at positions pos .. pos + count - 1
// and the cache already holds positions 0 .. pos + count - 1, cached prefix included); query at
// position p attends to keys first_key(p, window) .. p of its own sequence (0 .. p without a sliding
// window); GQA: query head h reads kv head h / G. Tiles before the tile's first visible key are skipped.
//
// Workgroup (query tile, kv head h, row b). Its query rows are the row's (token, head-in-group)
// pairs flattened as t * G + g, BR = WG / LANES of them, so all G heads sharing kv head h use each
// staged K/V tile (GQA without repeating K/V). Thread (query row, lane) keeps its lane's slice of
// q and of the output accumulator in registers (HS / LANES floats each: vec4s lane, lane + LANES, ..),
// so neighbouring lanes read neighbouring vec4s of a staged key and rows read the same ones
// (broadcast). Per key tile of BK keys: stage K and V (coalesced: a block's head is contiguous),
// partial dots per lane, lane partials summed through workgroup memory, online softmax update
// (running max m, denominator l, rescale o by exp(m_old - m_new)), o += p v.
// Optional output: lse = m + log(l) per (token, head), what a FlashAttention-2 backward needs.

override WG: u32 = 64u;         // threads = BR query rows * LANES
override HS: u32 = 64u;         // head dim, a multiple of 4
override NKV: u32 = 1u;
override G: u32 = 1u;           // query heads per kv head
override LANES: u32 = 2u;       // threads per query row; HS / 4 / LANES <= MAX_DPT4
override BK: u32 = 16u;         // keys per tile (<= MAX_BK)
override KV_LEN: u32 = 256u;    // BK * HS / 4 (vec4)
override PART_LEN: u32 = 1024u; // BK * WG
const MAX_DPT4: u32 = 8u;
const MAX_BK: u32 = 16u;

var<workgroup> k_s: array<vec4<f32>, KV_LEN>;   // [BK][HS/4]
var<workgroup> v_s: array<vec4<f32>, KV_LEN>;   // [BK][HS/4]
var<workgroup> part_s: array<f32, PART_LEN>;    // [BK][WG] lane partial dots

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let tile = wid.x;
  let h = wid.y;
  let b = wid.z;
  let HS4 = HS / 4u;
  let NH = NKV * G;
  let DPT4 = HS4 / LANES;
  let BR = WG / LANES;

  stage_row(b, tid);
  let row = workgroupUniformLoad(&row_s);
  let seq = row.x;
  let pos0 = row.y;
  let nRows = row.z * G;
  let r0 = tile * BR;
  if (r0 >= nRows) {
    return; // a shorter row of the batch: the grid is sized for the longest
  }
  let rr = tid / LANES;
  let lane = tid % LANES;
  let f = min(r0 + rr, nRows - 1u); // rows past the end mirror the last one and write nothing
  let live = r0 + rr < nRows;
  let t = f / G;
  let qh = h * G + f % G;
  let qpos = pos0 + t;
  let maxPos = pos0 + (min(r0 + BR, nRows) - 1u) / G; // last key any row of the tile sees
  let minPos = first_key(pos0 + r0 / G, params.window); // first key any row of the tile sees
  let kFirst = first_key(qpos, params.window);
  let tok = row.w + t;

  var qr = array<vec4<f32>, MAX_DPT4>();
  var o = array<vec4<f32>, MAX_DPT4>();
  for (var i = 0u; i < DPT4; i++) {
    qr[i] = q[(tok * NH + qh) * HS4 + lane + i * LANES] * params.scale;
  }
  var m = NEG_BIG;
  var l = 0.0;

  let nTiles = maxPos / BK + 1u;
  for (var kt = minPos / BK; kt < nTiles; kt++) {
    let k0 = kt * BK;
    stage_kv_tile(seq, h, k0, minPos, maxPos, tid); // kv-tile.wgsl
    workgroupBarrier();

    var s = array<f32, MAX_BK>();
    for (var j = 0u; j < BK; j++) {
      var acc = 0.0;
      for (var i = 0u; i < DPT4; i++) {
        acc += dot(qr[i], k_s[j * HS4 + lane + i * LANES]);
      }
      s[j] = acc;
    }
    if (LANES > 1u) {
      for (var j = 0u; j < BK; j++) {
        part_s[j * WG + tid] = s[j];
      }
      workgroupBarrier();
      for (var j = 0u; j < BK; j++) {
        var acc = 0.0;
        for (var ln = 0u; ln < LANES; ln++) {
          acc += part_s[j * WG + rr * LANES + ln];
        }
        s[j] = acc;
      }
    }

    // Online softmax: causal (and window) mask, new running max, rescale what was accumulated.
    var mNew = m;
    for (var j = 0u; j < BK; j++) {
      s[j] = select(NEG_BIG, s[j], k0 + j <= qpos && k0 + j >= kFirst);
      mNew = max(mNew, s[j]);
    }
    let corr = exp(m - mNew);
    l *= corr;
    for (var i = 0u; i < DPT4; i++) {
      o[i] *= corr;
    }
    for (var j = 0u; j < BK; j++) {
      let p = select(0.0, exp(s[j] - mNew), k0 + j <= qpos && k0 + j >= kFirst);
      l += p;
      for (var i = 0u; i < DPT4; i++) {
        o[i] += p * v_s[j * HS4 + lane + i * LANES];
      }
    }
    m = mNew;
    workgroupBarrier(); // the next tile overwrites k_s, v_s, part_s
  }

  if (live) {
    let inv = 1.0 / l;
    for (var i = 0u; i < DPT4; i++) {
      out[(tok * NH + qh) * HS4 + lane + i * LANES] = o[i] * inv;
    }
    if (params.writeLse != 0u && lane == 0u) {
      lse[tok * NH + qh] = m + log(l);
    }
  }
}
