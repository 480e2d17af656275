// Decode attention over the paged KV cache, split over the KV length (flash-decoding).
// One query token per batch row (its k, v already written at position pos); context = pos + 1.
// Workgroup (split s, kv head h, row b) handles the G = NH / NKV query heads that share kv head h
// (GQA: K and V are read once for all G heads, never repeated) over keys
// [f + s * splitLen, min(f + (s + 1) * splitLen, ctx)), f = first_key(ctx - 1, window) (0 without a
// sliding window), and writes for each head a partial
// (o[HS] = sum exp(score - m) v, m, l) into partials [B, NH, numSplits, HS + 2] (docs/engine.md).
//
// Phases (scores of the whole split stay in workgroup memory, so the softmax is exact per split
// and each key's exp is computed once):
//   1. scores: LANES threads per key, each a slice of HS (vec4s lane, lane + LANES, ...), partial
//      dot products reduced through workgroup memory (double-buffered: one barrier per chunk).
//   2. max per head (tree), then p = exp(score - m) in place.
//   3. p . V: thread (column c of HS/4, key group kg) walks keys kg, kg + KG, ... reading V rows
//      coalesced, four at a time, and accumulating all G heads; the KG groups are summed through
//      workgroup memory.

override WG: u32 = 64u;          // threads per workgroup (a power of two)
override HS: u32 = 64u;          // head dim, a multiple of 4
override NKV: u32 = 1u;
override G: u32 = 1u;            // query heads per kv head (<= MAX_G)
override LANES: u32 = 4u;        // threads per key in phase 1; divides HS / 4
override MAX_SPLIT: u32 = 256u;  // capacity of the per-head score rows
override Q_LEN: u32 = 16u;       // G * HS / 4 (vec4)
override S_LEN: u32 = 256u;      // G * MAX_SPLIT
override SCRATCH_LEN: u32 = 512u;
const MAX_G: u32 = 16u;
const MAX_PER: u32 = 16u;       // vec4s of a key per thread in phase 1 (HS / 4 / LANES)

var<workgroup> q_s: array<vec4<f32>, Q_LEN>;       // the G query vectors, pre-scaled
var<workgroup> s_s: array<f32, S_LEN>;             // [G][MAX_SPLIT] scores, then probabilities
var<workgroup> scratch: array<f32, SCRATCH_LEN>;   // phase-1 partials, max tree, p.V reduction
var<workgroup> m_s: array<f32, MAX_G>;
var<workgroup> row_s: vec2<u32>;

fn kv_row(seq: u32, p: u32, h: u32) -> u32 {
  return kv_index(seq, p, h, NKV, HS / 4u, params.maxBlocksPerSeq);
}

// Column c of key j's V row in the split from kStart, or zeros past its n keys.
fn v_row(seq: u32, kStart: u32, h: u32, c: u32, j: u32, n: u32) -> vec4<f32> {
  if (j < n) {
    return vCache[kv_row(seq, kStart + j, h) + c];
  }
  return vec4<f32>();
}

// o_g += p_gj v, l_g += p_gj for the G heads.
fn accumulate_v(o: ptr<function, array<vec4<f32>, MAX_G>>, l: ptr<function, array<f32, MAX_G>>, v: vec4<f32>, j: u32) {
  for (var g = 0u; g < G; g++) {
    let p = s_s[g * MAX_SPLIT + j];
    (*o)[g] += p * v;
    (*l)[g] += p;
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let split = wid.x;
  let h = wid.y;
  let b = wid.z;
  let HS4 = HS / 4u;
  let NH = NKV * G;
  let W = HS + 2u;

  if (tid == 0u) {
    let r = rows[b];
    row_s = vec2<u32>(r.seq, r.pos + 1u);
  }
  let row = workgroupUniformLoad(&row_s);
  let seq = row.x;
  let ctx = row.y;
  // Splits tile the keys the query sees, from the window's first: a sliding layer's plan covers
  // the window, not the whole context.
  let kStart = first_key(ctx - 1u, params.window) + split * params.splitLen;
  let kEnd = min(kStart + params.splitLen, ctx);
  let gStride = params.numSplits * W;
  let out0 = ((b * NH + h * G) * params.numSplits + split) * W;

  if (kStart >= kEnd) {
    // Empty split (a shorter row in a batch sized for the longest): m = -big, l = 0, o = 0.
    for (var e = tid; e < G * W; e += WG) {
      let i = e % W;
      partials[out0 + (e / W) * gStride + i] = select(0.0, NEG_BIG, i == HS);
    }
    return;
  }
  let n = kEnd - kStart;

  for (var e = tid; e < G * HS4; e += WG) {
    q_s[e] = q[(b * NH + h * G) * HS4 + e] * params.scale;
  }
  workgroupBarrier();

  // Phase 1: scores s_s[g][j] = (scale q_g) . k_j.
  let KPC = WG / LANES; // keys per chunk
  let slot = tid / LANES;
  let lane = tid % LANES;
  let perLane = HS4 / LANES;
  let nChunks = (n + KPC - 1u) / KPC;
  // This thread's slice of its key, loaded one chunk ahead: the next chunk's loads are in flight
  // while this chunk is reduced (the barrier would otherwise expose the full load latency).
  var kr = array<vec4<f32>, MAX_PER>();
  if (slot < KPC && slot < n) {
    let base = kv_row(seq, kStart + slot, h);
    for (var i = 0u; i < perLane; i++) {
      kr[i] = kCache[base + lane + i * LANES];
    }
  }
  for (var ch = 0u; ch < nChunks; ch++) {
    let j = ch * KPC + slot;
    var acc = array<f32, MAX_G>(); // explicit: a loop-body var must restart at zero each chunk
    if (slot < KPC && j < n) {
      for (var i = 0u; i < perLane; i++) {
        let c = lane + i * LANES;
        for (var g = 0u; g < G; g++) {
          acc[g] += dot(q_s[g * HS4 + c], kr[i]);
        }
      }
    }
    if (slot < KPC && j + KPC < n) {
      let base = kv_row(seq, kStart + j + KPC, h);
      for (var i = 0u; i < perLane; i++) {
        kr[i] = kCache[base + lane + i * LANES];
      }
    }
    if (LANES == 1u) {
      if (slot < KPC && j < n) {
        for (var g = 0u; g < G; g++) {
          s_s[g * MAX_SPLIT + j] = acc[g];
        }
      }
    } else {
      // Partials [g][slot][lane] into one half of scratch; the halves alternate by chunk, so the
      // next chunk's writes never meet this chunk's reads and one barrier per chunk suffices.
      let buf = (ch & 1u) * G * KPC * LANES;
      if (slot < KPC) {
        for (var g = 0u; g < G; g++) {
          scratch[buf + (g * KPC + slot) * LANES + lane] = acc[g];
        }
      }
      workgroupBarrier();
      for (var r = tid; r < G * KPC; r += WG) {
        let jj = ch * KPC + r % KPC;
        if (jj < n) {
          var s = 0.0;
          for (var l = 0u; l < LANES; l++) {
            s += scratch[buf + r * LANES + l];
          }
          s_s[(r / KPC) * MAX_SPLIT + jj] = s;
        }
      }
    }
  }
  workgroupBarrier();

  // Phase 2: m_g = max_j s (strided partial maxima, then a tree), p = exp(s - m_g).
  for (var g = 0u; g < G; g++) {
    var mx = NEG_BIG;
    for (var j = tid; j < n; j += WG) {
      mx = max(mx, s_s[g * MAX_SPLIT + j]);
    }
    scratch[g * WG + tid] = mx;
  }
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (tid < stride) {
      for (var g = 0u; g < G; g++) {
        scratch[g * WG + tid] = max(scratch[g * WG + tid], scratch[g * WG + tid + stride]);
      }
    }
    workgroupBarrier();
  }
  if (tid < G) {
    m_s[tid] = scratch[tid * WG];
  }
  workgroupBarrier();
  for (var e = tid; e < G * n; e += WG) {
    let g = e / n;
    let i = g * MAX_SPLIT + e % n;
    s_s[i] = exp(s_s[i] - m_s[g]);
  }
  workgroupBarrier();

  // Phase 3: o_g = sum_j p_gj v_j, l_g = sum_j p_gj.
  let KG = WG / HS4;
  let c = tid % HS4;
  let kg = tid / HS4;
  var o: array<vec4<f32>, MAX_G>;
  var l: array<f32, MAX_G>;
  if (kg < KG) {
    // Four keys' V rows (each behind its block-table read) loaded before any is used, then added
    // in key order: one at a time, each thread's walk was a chain of dependent loads. Named values,
    // not an array indexed by a counter (which SwiftShader's compiler keeps in memory).
    for (var j0 = kg; j0 < n; j0 += 4u * KG) {
      let v0 = v_row(seq, kStart, h, c, j0, n);
      let v1 = v_row(seq, kStart, h, c, j0 + KG, n);
      let v2 = v_row(seq, kStart, h, c, j0 + 2u * KG, n);
      let v3 = v_row(seq, kStart, h, c, j0 + 3u * KG, n);
      accumulate_v(&o, &l, v0, j0);
      if (j0 + KG < n) {
        accumulate_v(&o, &l, v1, j0 + KG);
      }
      if (j0 + 2u * KG < n) {
        accumulate_v(&o, &l, v2, j0 + 2u * KG);
      }
      if (j0 + 3u * KG < n) {
        accumulate_v(&o, &l, v3, j0 + 3u * KG);
      }
    }
    for (var g = 0u; g < G; g++) {
      let at = (kg * G + g) * HS + c * 4u;
      scratch[at] = o[g].x;
      scratch[at + 1u] = o[g].y;
      scratch[at + 2u] = o[g].z;
      scratch[at + 3u] = o[g].w;
      if (c == 0u) {
        scratch[KG * G * HS + kg * G + g] = l[g];
      }
    }
  }
  workgroupBarrier();
  for (var e = tid; e < G * HS; e += WG) {
    let g = e / HS;
    let d = e % HS;
    var sum = 0.0;
    for (var k = 0u; k < KG; k++) {
      sum += scratch[(k * G + g) * HS + d];
    }
    partials[out0 + g * gStride + d] = sum;
  }
  if (tid < G) {
    var lsum = 0.0;
    for (var k = 0u; k < KG; k++) {
      lsum += scratch[KG * G * HS + k * G + tid];
    }
    partials[out0 + tid * gStride + HS] = m_s[tid];
    partials[out0 + tid * gStride + HS + 1u] = lsum;
  }
}
