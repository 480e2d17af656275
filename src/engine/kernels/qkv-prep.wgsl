// qkv-prep (prefill side): from the QKV projection [T, (NH + 2 NKV) * HS] (bias already added by
// the GEMM epilogue) to q [T, NH, HS] and the paged K/V cache. Per q and k head: Qwen3 RMSNorm
// (when QK_NORM), then RoPE with HF rotate_half semantics from the shared cos/sin table
// (model/config/rope.ts) over the first ROT dims (Phi-3's partial rotary; the rest pass through), skipped
// on a layer whose `params.rope` is 0 (SmolLM3's NoPE layers); v heads are copied unchanged. Tokens
// are the batch rows' tokens concatenated in row order (BatchRow.count each).
//
// Two entry points, q heads and k/v heads, so each binds at most 8 storage buffers (the WebGPU
// default limit); one invocation per (token, head): a head is HS contiguous floats, the norm
// needs all of them, and the work is tiny next to the GEMM that produced it, so no workgroup
// cooperation (and no barrier) is worth it. The decode-side twin is fused in the dense `qkv` kernel.

override WG: u32 = 64u;
override HS: u32 = 64u;
// Rotated dims of a head (R; the table holds R/2 entries per position).
override ROT: u32 = 64u;
override NH: u32 = 1u;
override NKV: u32 = 1u;
override QK_NORM: bool = false;
// File dtype of q_norm / k_norm, packed in u32 (docs/engine.md "Tensors on the GPU"): 0 f32, 1 f16, 2 bf16.
override NORM_DTYPE: u32 = 0u;

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

// (block-table row, position) of token t (find_row: batch-row-scan.wgsl).
fn token_place(t: u32) -> vec2<u32> {
  let place = find_row(t);
  let row = rows[place.x];
  return vec2<u32>(row.seq, row.pos + (t - place.y));
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

// pair_dims(i): rope-pairs.wgsl.
fn rotates(i: u32) -> bool {
  return params.rope != 0u && i < ROT / 2u;
}

// HF rotate_half: [x1 | x2] -> [x1 cos - x2 sin | x2 cos + x1 sin], cos/sin of pos * invFreq[i];
// pass-through pairs unchanged.
fn rope(x1: f32, x2: f32, pos: u32, i: u32) -> vec2<f32> {
  if (!rotates(i)) {
    return vec2<f32>(x1, x2);
  }
  let cs = ropeTable[pos * (ROT / 2u) + i];
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
  for (var i = 0u; i < HS / 2u; i++) {
    let d = pair_dims(i);
    var x1 = qkv[src + d.x] * rstd;
    var x2 = qkv[src + d.y] * rstd;
    if (QK_NORM) {
      x1 *= unpack_weight(qNorm[weight_word(d.x)], d.x);
      x2 *= unpack_weight(qNorm[weight_word(d.y)], d.y);
    }
    let y = rope(x1, x2, pos, i);
    qOut[dst + d.x] = y.x;
    qOut[dst + d.y] = y.y;
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
  for (var i = 0u; i < HS / 2u; i++) {
    let d = pair_dims(i);
    var x1 = qkv[src + d.x] * rstd;
    var x2 = qkv[src + d.y] * rstd;
    if (QK_NORM) {
      x1 *= unpack_weight(kNorm[weight_word(d.x)], d.x);
      x2 *= unpack_weight(kNorm[weight_word(d.y)], d.y);
    }
    let y = rope(x1, x2, place.y, i);
    kCache[dst + d.x] = y.x;
    kCache[dst + d.y] = y.y;
  }
}

// ---- Backward (the trainer's; QkvPrepBackward in qkv-prep-backward.ts) ----
// In place on the gradient of the QKV projection, dqkv [T, (NH + 2 NKV) * HS]: for each q and k head
// it holds the gradient w.r.t. the head after RoPE (the attention backward writes it there) and
// leaves with the gradient w.r.t. the projection output, undoing the forward in reverse order
// (pass-through pairs and NoPE layers skip the RoPE step):
//   RoPE:  y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin  ->  dx1 = d1 cos + d2 sin, dx2 = d2 cos - d1 sin
//   Qwen3: x = n * w, n = p * rstd (p: the saved projection in qkv; rstd recomputed from it)
//          ->  dp = rstd * (dx * w - n * mean(dx * w * n))
// v heads are untouched: their gradient passes straight to the projection. One invocation per
// (token, q or k head); a head's two passes (mean, then write) read its HS gradients twice, and
// each pair (i, i + HS/2) is read before it is written, so working in place is safe.

fn norm_weight(isK: bool, i: u32) -> f32 {
  if (isK) {
    return unpack_weight(kNorm[weight_word(i)], i);
  }
  return unpack_weight(qNorm[weight_word(i)], i);
}

// RoPE backward of pair i (dims pair_dims(i)) at src: rotation by -theta; pass-through pairs unchanged.
fn rope_back(src: u32, pos: u32, i: u32) -> vec2<f32> {
  let dims = pair_dims(i);
  let d1 = dqkv[src + dims.x];
  let d2 = dqkv[src + dims.y];
  if (!rotates(i)) {
    return vec2<f32>(d1, d2);
  }
  let cs = ropeTable[pos * (ROT / 2u) + i];
  return vec2<f32>(d1 * cs.x + d2 * cs.y, d2 * cs.x - d1 * cs.y);
}

@compute @workgroup_size(WG)
fn prep_backward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let idx = invocation(wid, nwg, lid);
  if (idx >= params.T * (NH + NKV)) {
    return;
  }
  let t = idx / (NH + NKV);
  let j = idx % (NH + NKV); // 0..NH-1: q heads, NH..NH+NKV-1: k heads (contiguous in the row)
  let pos = token_place(t).y;
  let src = (t * (NH + 2u * NKV) + j) * HS;
  let half = HS / 2u;
  if (!QK_NORM) {
    for (var i = 0u; i < half; i++) {
      let d = rope_back(src, pos, i);
      let dims = pair_dims(i);
      dqkv[src + dims.x] = d.x;
      dqkv[src + dims.y] = d.y;
    }
    return;
  }
  let isK = j >= NH;
  let rstd = head_rstd(src);
  var dot = 0.0; // sum over the head of dx * w * p
  for (var i = 0u; i < half; i++) {
    let d = rope_back(src, pos, i);
    let e = pair_dims(i);
    dot += d.x * norm_weight(isK, e.x) * qkv[src + e.x] + d.y * norm_weight(isK, e.y) * qkv[src + e.y];
  }
  let mean = dot * rstd / f32(HS); // mean(dx * w * n)
  for (var i = 0u; i < half; i++) {
    let d = rope_back(src, pos, i);
    let e = pair_dims(i);
    dqkv[src + e.x] = rstd * (d.x * norm_weight(isK, e.x) - qkv[src + e.x] * rstd * mean);
    dqkv[src + e.y] = rstd * (d.y * norm_weight(isK, e.y) - qkv[src + e.y] * rstd * mean);
  }
}
