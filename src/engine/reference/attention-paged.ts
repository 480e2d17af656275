/**
 * Reference helpers for the paged KV cache: plain loops that read and write the layout of
 * docs/engine.md ("Shared data layouts"), and the paged attention, decode partials, their merge
 * and the prefill q/k/v preparation written on top of them. The oracle of the attention and
 * qkv-prep GPU tests; slow and obvious on purpose.
 *
 * Paged attention here is gather-then-naive: positions 0..S-1 of a sequence are gathered into
 * contiguous K/V and handed to `attentionForward` (reference/attention.ts), so the GPU kernels
 * that read blocks in place are checked against an independent path.
 *
 * Not here: the naive attention itself (reference/attention.ts), norms and RoPE (reference/rmsnorm.ts,
 * reference/rope.ts), any block allocation policy.
 */
import { attentionForward, attentionLogsumexp } from './attention';
import { firstVisibleKey } from '../model/config/attention-window';
import { rmsnormForward } from './rmsnorm';
import type { RopeFreqs } from '../model/config/rope';
import { ropeForward } from './rope';
import { KV_BLOCK, type BatchRow } from '../kernels/kv-layout';

/** Where a paged cache lives, for the reference: one layer's K and V plus the block table. */
export interface PagedKv {
  k: Float32Array; // [numBlocks, NKV, KV_BLOCK, HS]
  v: Float32Array; // [numBlocks, NKV, KV_BLOCK, HS]
  blockTable: Uint32Array; // [maxSeqs, maxBlocksPerSeq]
  maxBlocksPerSeq: number;
  NKV: number;
  HS: number;
}

/** Float offset of (position p of block-table row seq, kv head h, dim 0) in a layer's K or V. */
export function kvOffset(kv: PagedKv, seq: number, p: number, h: number): number {
  const block = kv.blockTable[seq * kv.maxBlocksPerSeq + Math.floor(p / KV_BLOCK)];
  return ((block * kv.NKV + h) * KV_BLOCK + (p % KV_BLOCK)) * kv.HS;
}

/** Writes k, v [count, NKV, HS] at positions pos..pos+count-1 of sequence `seq`. */
export function kvWritePaged(kv: PagedKv, k: Float32Array, v: Float32Array, seq: number, pos: number, count: number): void {
  const { NKV, HS } = kv;
  for (let t = 0; t < count; t++) {
    for (let h = 0; h < NKV; h++) {
      const dst = kvOffset(kv, seq, pos + t, h);
      const src = (t * NKV + h) * HS;
      for (let d = 0; d < HS; d++) {
        kv.k[dst + d] = k[src + d];
        kv.v[dst + d] = v[src + d];
      }
    }
  }
}

/** Reads positions from..S-1 of sequence `seq` into contiguous kOut, vOut [S, NKV, HS] (earlier rows stay as they are). */
export function kvGatherPaged(kOut: Float32Array, vOut: Float32Array, kv: PagedKv, seq: number, S: number, from = 0): void {
  const { NKV, HS } = kv;
  for (let p = from; p < S; p++) {
    for (let h = 0; h < NKV; h++) {
      const src = kvOffset(kv, seq, p, h);
      const dst = (p * NKV + h) * HS;
      for (let d = 0; d < HS; d++) {
        kOut[dst + d] = kv.k[src + d];
        vOut[dst + d] = kv.v[src + d];
      }
    }
  }
}

/**
 * Causal GQA attention of a prefill batch over the paged cache (which already holds every row's
 * prefix and its new tokens). Tokens are the rows' tokens concatenated in row order; token i of
 * row r sits at position r.pos + i and attends to positions 0..r.pos + i of its own sequence (with a
 * window W > 0, only the last W of them: keys before the window may sit in freed blocks and are not read).
 * out: [T, NH, HS]; lse (optional): [T, NH], log of the softmax denominator of the scaled scores.
 */
export function attentionPrefillPaged(
  out: Float32Array, // [T, NH, HS]
  lse: Float32Array | null, // [T, NH]
  q: Float32Array, // [T, NH, HS]
  kv: PagedKv,
  rows: readonly BatchRow[],
  NH: number,
  W = 0,
): void {
  const { NKV, HS } = kv;
  let t0 = 0;
  for (const row of rows) {
    const T = row.count;
    const S = row.pos + T;
    const k = new Float32Array(S * NKV * HS);
    const v = new Float32Array(S * NKV * HS);
    const first = firstVisibleKey(row.pos, W); // the row's first query sees no earlier key
    kvGatherPaged(k, v, kv, row.seq, S, first);
    const qRow = q.subarray(t0 * NH * HS, (t0 + T) * NH * HS);
    const outRow = out.subarray(t0 * NH * HS, (t0 + T) * NH * HS);
    attentionForward(outRow, qRow, k, v, T, S, NH, NKV, HS, row.pos, W);
    if (lse) attentionLogsumexp(lse.subarray(t0 * NH, (t0 + T) * NH), qRow, k, T, S, NH, NKV, HS, row.pos, W);
    t0 += T;
  }
}

/** Sentinel max of an empty split (docs/engine.md): exp(EMPTY_MAX - anything real) is 0. */
export const EMPTY_SPLIT_MAX = -3.0e38;

/**
 * Decode partials, split over the KV length: for row b (one query token at position rows[b].pos,
 * context pos + 1), head h, split s over keys [f + s * splitLen, min(f + (s + 1) * splitLen, pos + 1)) from
 * the window's first key f = firstVisibleKey(pos, window) (0 without a window):
 * o[HS] = sum exp(score - m) v (unnormalised), m = max score, l = sum exp(score - m); an empty split
 * has m = EMPTY_SPLIT_MAX, l = 0, o = 0. partials: [B, NH, numSplits, HS + 2].
 */
export function attentionDecodePartials(
  partials: Float32Array, // [B, NH, numSplits, HS + 2]
  q: Float32Array, // [B, NH, HS]
  kv: PagedKv,
  rows: readonly BatchRow[],
  NH: number,
  numSplits: number,
  splitLen: number,
  window = 0,
): void {
  const { NKV, HS } = kv;
  const G = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  const W = HS + 2;
  rows.forEach((row, b) => {
    const ctx = row.pos + 1;
    for (let h = 0; h < NH; h++) {
      const kh = Math.floor(h / G);
      for (let s = 0; s < numSplits; s++) {
        const base = ((b * NH + h) * numSplits + s) * W;
        const start = firstVisibleKey(row.pos, window) + s * splitLen;
        const end = Math.min(start + splitLen, ctx);
        partials.fill(0, base, base + W);
        if (start >= end) {
          partials[base + HS] = EMPTY_SPLIT_MAX;
          continue;
        }
        const scores: number[] = [];
        for (let p = start; p < end; p++) {
          const ko = kvOffset(kv, row.seq, p, kh);
          let dot = 0;
          for (let d = 0; d < HS; d++) dot += q[(b * NH + h) * HS + d] * kv.k[ko + d];
          scores.push(dot * scale);
        }
        const m = Math.max(...scores);
        let l = 0;
        for (let p = start; p < end; p++) {
          const e = Math.exp(scores[p - start] - m);
          l += e;
          const vo = kvOffset(kv, row.seq, p, kh);
          for (let d = 0; d < HS; d++) partials[base + d] += e * kv.v[vo + d];
        }
        partials[base + HS] = m;
        partials[base + HS + 1] = l;
      }
    }
  });
}

/** Merge of decode partials: M = max m_i; out = sum o_i exp(m_i - M) / sum l_i exp(m_i - M). out: [B, NH * HS]. */
export function attentionMergePartials(
  out: Float32Array, // [B, NH * HS]
  partials: Float32Array, // [B, NH, numSplits, HS + 2]
  B: number,
  NH: number,
  numSplits: number,
  HS: number,
): void {
  const W = HS + 2;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const base = (b * NH + h) * numSplits * W;
      let M = -Infinity;
      for (let s = 0; s < numSplits; s++) M = Math.max(M, partials[base + s * W + HS]);
      let den = 0;
      const acc = new Float64Array(HS);
      for (let s = 0; s < numSplits; s++) {
        const w = Math.exp(partials[base + s * W + HS] - M);
        den += partials[base + s * W + HS + 1] * w;
        for (let d = 0; d < HS; d++) acc[d] += partials[base + s * W + d] * w;
      }
      for (let d = 0; d < HS; d++) out[(b * NH + h) * HS + d] = acc[d] / den;
    }
  }
}

/** The weights of Qwen3's q/k RMSNorm, decoded to f32. */
export interface QkNorm {
  q: Float32Array; // [HS]
  k: Float32Array; // [HS]
  eps: number;
}

/**
 * Prefill q/k/v preparation (HF order), composed from the dense references: split each token's row
 * of the QKV projection [NH + 2 NKV heads of HS] into q, k, v; Qwen3 RMSNorm of each q and k head
 * when `norm` is given (rmsnormForward); RoPE (ropeForward, rotate_half); q to qOut [T, NH, HS],
 * k and v into the paged cache at each token's position.
 */
export function qkvPrepForward(
  qOut: Float32Array, // [T, NH, HS]
  kv: PagedKv,
  qkv: Float32Array, // [T, (NH + 2 NKV) * HS]
  norm: QkNorm | null,
  invFreq: Float32Array | RopeFreqs, // [R / 2] (model/config/rope.ts; empty: no RoPE, a NoPE layer)
  rows: readonly BatchRow[],
  NH: number,
): void {
  const { NKV, HS } = kv;
  const width = (NH + 2 * NKV) * HS;
  let t = 0;
  for (const row of rows) {
    for (let i = 0; i < row.count; i++, t++) {
      const pos = row.pos + i;
      const q = qkv.slice(t * width, t * width + NH * HS);
      const k = qkv.slice(t * width + NH * HS, t * width + (NH + NKV) * HS);
      const v = qkv.slice(t * width + (NH + NKV) * HS, (t + 1) * width);
      if (norm) {
        rmsnormForward(q, null, q, norm.q, NH, HS, norm.eps);
        rmsnormForward(k, null, k, norm.k, NKV, HS, norm.eps);
      }
      ropeForward(q, q, [pos], invFreq, 1, NH, HS);
      ropeForward(k, k, [pos], invFreq, 1, NKV, HS);
      qOut.set(q, t * NH * HS);
      kvWritePaged(kv, k, v, row.seq, pos, 1);
    }
  }
}
