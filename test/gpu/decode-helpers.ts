// Shared set-up of the fused decode kernel tests: a random model on the GPU (WeightSet) next to its
// reference, a decode stream filled with a residual and pending MLP partials, batch rows and a KV
// cache with shuffled blocks, and decode-attention partials computed in plain TypeScript.
import type { KernelContext } from '../../src/engine/gpu/context';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import type { BatchRow } from '../../src/engine/kernels/kv-layout';
import { KvCache } from '../../src/engine/model/kv/kv-cache';
import { KV_BLOCK, packBatchRows } from '../../src/engine/kernels/kv-layout';
import { isBlockDType } from '../../src/engine/tensor/dtype';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { ReferenceModel } from '../../src/engine/reference/model';
import type { Rng } from '../../src/engine/tensor/random';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { dequantizedTensor, randomQuantizedModel } from '../../src/engine/reference/random-quantized';
import { attentionForward } from '../../src/engine/reference/attention';
import { upload } from './dense-helpers';

export interface TestModel {
  cfg: ModelConfig;
  weights: WeightSet;
  ref: ReferenceModel;
}

/** A weight dtype for every tensor, or one per matrix (a quantized model's mix: block types allowed). */
export type WeightDtypes = DType | ((name: string) => DType);

export async function testModel(
  ctx: KernelContext,
  arch: Architecture,
  dtype: WeightDtypes,
  seed: number,
  overrides: Partial<ModelConfig> = {},
): Promise<TestModel> {
  const cfg = testConfig(arch, overrides);
  if (typeof dtype === 'string' && !isBlockDType(dtype)) {
    const tensors = randomModelTensors(cfg, dtype, seed);
    const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 512 });
    return { cfg, weights, ref: new ReferenceModel(cfg, tensors) };
  }
  // Random blocks on the GPU; the reference runs on the same blocks dequantized to f32.
  const tensors = randomQuantizedModel(cfg, typeof dtype === 'string' ? () => dtype : dtype, seed);
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 512 });
  return { cfg, weights, ref: new ReferenceModel(cfg, tensors.map(dequantizedTensor)) };
}

/** A stream whose residual and `pending` partial blocks hold random values; returns them too. */
export function filledStream(ctx: KernelContext, rng: Rng, B: number, C: number, partials: number, pending: number) {
  const stream = new DecodeStream(ctx.device, B, C, partials);
  const init = rng.normals((1 + partials) * B * C);
  for (let i = (1 + pending) * B * C; i < init.length; i++) init[i] = 0;
  ctx.device.queue.writeBuffer(stream.buffer, 0, init);
  // h[b] = residual + sum of the pending partials, in that order
  const h = new Float32Array(B * C);
  for (let i = 0; i < B * C; i++) {
    let v = init[i];
    for (let p = 0; p < pending; p++) v += init[(1 + p) * B * C + i];
    h[i] = v;
  }
  return { stream, init, h };
}

/** B batch rows at the given positions, each with its own block-table row of shuffled blocks. */
export function batchWithCache(ctx: KernelContext, rng: Rng, cfg: ModelConfig, positions: number[], numBlocks = 64) {
  const maxContext = Math.max(...positions) + 1;
  const cache = new KvCache(ctx.device, cfg, { maxSeqs: positions.length + 1, maxContext, numBlocks });
  const free = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = free.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [free[i], free[j]] = [free[j], free[i]];
  }
  const rows: BatchRow[] = positions.map((pos, b) => ({ seq: (b + 1) % (positions.length + 1), pos, adapter: 0xffffffff, count: 1 }));
  const tables = rows.map((r) => {
    const blocks = free.splice(0, Math.floor(r.pos / KV_BLOCK) + 1);
    cache.writeBlockTable(r.seq, blocks);
    return blocks;
  });
  return { cache, rows, tables, rowsBuffer: upload(ctx, packBatchRows(rows)) };
}

/** Element offset of (position, kv head) in a layer's cache for a sequence with `blocks`. */
export function cacheOffset(blocks: number[], pos: number, h: number, NKV: number, HS: number): number {
  return ((blocks[Math.floor(pos / KV_BLOCK)] * NKV + h) * KV_BLOCK + (pos % KV_BLOCK)) * HS;
}

/**
 * Decode-attention partials (docs/engine.md layout) of query q [NH, HS] against keys/values
 * [L, NKV, HS] for one batch row: split s covers keys s * splitLen .. ; empty splits are m = -3e38,
 * l = 0, o = 0. Returns [NH, S, HS + 2].
 */
export function attentionPartials(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  L: number,
  NH: number,
  NKV: number,
  HS: number,
  S: number,
  splitLen: number,
): Float32Array {
  const out = new Float32Array(NH * S * (HS + 2));
  const scale = 1 / Math.sqrt(HS);
  for (let h = 0; h < NH; h++) {
    const kh = Math.floor(h / (NH / NKV));
    for (let s = 0; s < S; s++) {
      const base = (h * S + s) * (HS + 2);
      const lo = s * splitLen;
      const hi = Math.min(L, lo + splitLen);
      if (lo >= hi) {
        out[base + HS] = -3e38;
        continue;
      }
      const scores: number[] = [];
      for (let t = lo; t < hi; t++) {
        let d = 0;
        for (let i = 0; i < HS; i++) d += q[h * HS + i] * k[(t * NKV + kh) * HS + i];
        scores.push(d * scale);
      }
      const m = Math.max(...scores);
      let l = 0;
      scores.forEach((sc, j) => {
        const e = Math.exp(sc - m);
        l += e;
        for (let i = 0; i < HS; i++) out[base + i] += e * v[((lo + j) * NKV + kh) * HS + i];
      });
      out[base + HS] = m;
      out[base + HS + 1] = l;
    }
  }
  return out;
}

/**
 * Random q, keys and values for each batch row's context length, their decode-attention partials
 * [B, NH, S, HS + 2] (S splits of splitLen keys) and the attention output [B, NH * HS] those partials
 * merge to (the reference's, at each row's last position).
 */
export function randomAttentionRows(
  rng: Rng,
  lengths: readonly number[],
  NH: number,
  NKV: number,
  HS: number,
  S: number,
  splitLen: number,
): { partials: Float32Array; att: Float32Array } {
  const B = lengths.length;
  const att = new Float32Array(B * NH * HS);
  const partials = new Float32Array(B * NH * S * (HS + 2));
  lengths.forEach((L, b) => {
    const q = rng.normals(NH * HS);
    const k = rng.normals(L * NKV * HS);
    const v = rng.normals(L * NKV * HS);
    partials.set(attentionPartials(q, k, v, L, NH, NKV, HS, S, splitLen), b * NH * S * (HS + 2));
    attentionForward(att.subarray(b * NH * HS, (b + 1) * NH * HS), q, k, v, 1, L, NH, NKV, HS, L - 1);
  });
  return { partials, att };
}
