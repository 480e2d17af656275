// qkv-prep (prefill side): from the QKV projection [T, (NH + 2 NKV) * HS] (bias already added by
// the GEMM epilogue) to q [T, NH, HS] and the paged K/V cache. Per q and k head: Qwen3 RMSNorm
// (when QK_NORM), then RoPE with HF rotate_half semantics from the shared cos/sin table
// (model/rope.ts); v heads are copied unchanged. Tokens are the batch rows' tokens concatenated
// in row order (BatchRow.count each).
//
// Two entry points, q heads and k/v heads, so each binds at most 8 storage buffers (the WebGPU
// default limit); one invocation per (token, head): a head is HS contiguous floats, the norm
// needs all of them, and the work is tiny next to the GEMM that produced it, so no workgroup
// cooperation (and no barrier) is worth it. The decode-side twin is fused in the dense `qkv` kernel.

struct Params {
  T: u32,
  B: u32,
  maxBlocksPerSeq: u32,
  eps: f32,
}

override WG: u32 = 64u;
override HS: u32 = 64u;
override NH: u32 = 1u;
override NKV: u32 = 1u;
override QK_NORM: bool = false;
// File dtype of q_norm / k_norm, packed in u32 (docs/engine.md "Tensors on the GPU"): 0 f32, 1 f16, 2 bf16.
override NORM_DTYPE: u32 = 0u;

@group(0) @binding(0) var<storage, read_write> qOut: array<f32>;        // [T, NH, HS]            (q entry)
@group(0) @binding(1) var<storage, read_write> kCache: array<f32>;      // [numBlocks, NKV, 16, HS] (kv entry)
@group(0) @binding(2) var<storage, read_write> vCache: array<f32>;      // [numBlocks, NKV, 16, HS] (kv entry)
@group(0) @binding(3) var<storage, read> qkv: array<f32>;               // [T, (NH + 2 NKV) * HS]
@group(0) @binding(4) var<storage, read> qNorm: array<u32>;             // [HS] packed             (q entry)
@group(0) @binding(5) var<storage, read> kNorm: array<u32>;             // [HS] packed             (kv entry)
@group(0) @binding(6) var<storage, read> ropeTable: array<vec2<f32>>;   // [positions, HS/2] (cos, sin)
@group(0) @binding(7) var<storage, read> blockTable: array<u32>;        // [maxSeqs, maxBlocksPerSeq] (kv entry)
@group(0) @binding(8) var<storage, read> rows: array<BatchRow>;         // [B]
@group(0) @binding(9) var<uniform> params: Params;

fn unpack_weight(word: u32, i: u32) -> f32 {
  if (NORM_DTYPE == 0u) {
    return bitcast<f32>(word);
  }
  if (NORM_DTYPE == 1u) {
    return unpack2x16float(word)[i & 1u];
  }
  // bf16: element 2i in the low half of word i.
  return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (i & 1u) == 1u));
}

// Word of element i of a packed weight.
fn weight_word(i: u32) -> u32 {
  return select(i >> 1u, i, NORM_DTYPE == 0u);
}

// (block-table row, position) of token t: rows are few (a prefill batch), so a scan is enough.
fn token_place(t: u32) -> vec2<u32> {
  var start = 0u;
  var r = 0u;
  loop {
    if (r + 1u >= params.B) { break; }
    let c = rows[r].count;
    if (t < start + c) { break; }
    start += c;
    r += 1u;
  }
  let row = rows[r];
  return vec2<u32>(row.seq, row.pos + (t - start));
}

// 1 / sqrt(mean(x^2) + eps) of the head starting at qkv[src] (Qwen3RMSNorm), 1 without q/k norm.
fn head_rstd(src: u32) -> f32 {
  if (!QK_NORM) {
    return 1.0;
  }
  var ss = 0.0;
  for (var d = 0u; d < HS; d++) {
    let x = qkv[src + d];
    ss += x * x;
  }
  return inverseSqrt(ss / f32(HS) + params.eps);
}

// HF rotate_half: [x1 | x2] -> [x1 cos - x2 sin | x2 cos + x1 sin], cos/sin of pos * invFreq[i].
fn rope(x1: f32, x2: f32, pos: u32, i: u32) -> vec2<f32> {
  let cs = ropeTable[pos * (HS / 2u) + i];
  return vec2<f32>(x1 * cs.x - x2 * cs.y, x2 * cs.x + x1 * cs.y);
}

fn invocation(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return (wid.y * nwg.x + wid.x) * WG + lid;
}

@compute @workgroup_size(WG)
fn prep_q(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let idx = invocation(wid, nwg, lid);
  if (idx >= params.T * NH) {
    return;
  }
  let t = idx / NH;
  let h = idx % NH;
  let pos = token_place(t).y;
  let src = (t * (NH + 2u * NKV) + h) * HS;
  let dst = (t * NH + h) * HS;
  let rstd = head_rstd(src);
  let half = HS / 2u;
  for (var i = 0u; i < half; i++) {
    var x1 = qkv[src + i] * rstd;
    var x2 = qkv[src + i + half] * rstd;
    if (QK_NORM) {
      x1 *= unpack_weight(qNorm[weight_word(i)], i);
      x2 *= unpack_weight(qNorm[weight_word(i + half)], i + half);
    }
    let y = rope(x1, x2, pos, i);
    qOut[dst + i] = y.x;
    qOut[dst + i + half] = y.y;
  }
}

@compute @workgroup_size(WG)
fn prep_kv(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let idx = invocation(wid, nwg, lid);
  if (idx >= params.T * 2u * NKV) {
    return;
  }
  let t = idx / (2u * NKV);
  let j = idx % (2u * NKV); // 0..NKV-1: k heads, NKV..2 NKV-1: v heads
  let place = token_place(t);
  let src = (t * (NH + 2u * NKV) + NH + j) * HS;
  if (j >= NKV) {
    let dst = kv_index(place.x, place.y, j - NKV, NKV, HS, params.maxBlocksPerSeq);
    for (var d = 0u; d < HS; d++) {
      vCache[dst + d] = qkv[src + d];
    }
    return;
  }
  let dst = kv_index(place.x, place.y, j, NKV, HS, params.maxBlocksPerSeq);
  let rstd = head_rstd(src);
  let half = HS / 2u;
  for (var i = 0u; i < half; i++) {
    var x1 = qkv[src + i] * rstd;
    var x2 = qkv[src + i + half] * rstd;
    if (QK_NORM) {
      x1 *= unpack_weight(kNorm[weight_word(i)], i);
      x2 *= unpack_weight(kNorm[weight_word(i + half)], i + half);
    }
    let y = rope(x1, x2, place.y, i);
    kCache[dst + i] = y.x;
    kCache[dst + i + half] = y.y;
  }
}
