/**
 * The attention family as the generation core builds it: createAttentionKernels from a ModelConfig,
 * weight inputs (q_norm, k_norm, the RoPE table) read from a real WeightSet, the cache a KvCache.
 * One prefill batch and one decode step per architecture's test config, against the references
 * (q/k norm weights decoded from the uploaded tensors, inv_freq from model/config/rope.ts).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createAttentionKernels } from '../../src/engine/kernels/registry';
import { attentionShapeOf, qkvPrepWeights } from '../../src/engine/model/weights/kernel-args';
import { tensorToF32 } from '../../src/engine/tensor/tensor-data';
import { KvCache } from '../../src/engine/model/kv/kv-cache';
import { NO_ADAPTER, packBatchRows, type BatchRow } from '../../src/engine/kernels/kv-layout';
import { ropeInvFreq } from '../../src/engine/model/config/rope';
import { layerNames } from '../../src/engine/model/weights/parameter-plan';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import type { Architecture } from '../../src/engine/model/config/model-config';
import {
  attentionDecodePartials,
  attentionMergePartials,
  attentionPrefillPaged,
  qkvPrepForward,
  type PagedKv,
} from '../../src/engine/reference/attention-paged';
import { expectClose } from '../../src/engine/reference/check';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { openGpu, readF32, Rng, runCalls, shuffled, uploadStorage, type Gpu } from './attention-fixtures';

let gpu: Gpu;
beforeAll(async () => {
  gpu = await openGpu();
});
afterAll(() => gpu?.device.destroy());

const TOL = { atol: 3e-5, rtol: 2e-4 };

describe('attention kernels of a model', () => {
  for (const arch of ['qwen3', 'llama'] as Architecture[]) {
    it(`${arch}: prefill and a decode step on a WeightSet's norms and RoPE table`, async () => {
      const { device } = gpu;
      const cfg = testConfig(arch);
      const { numHeads: NH, numKvHeads: NKV, headDim: HS } = cfg;
      const layer = 1;
      const tensors = randomModelTensors(cfg, 'bf16', 11);
      const weights = await WeightSet.upload(device, cfg, tensors, { ropePositions: 64 });
      const k = createAttentionKernels(gpu, attentionShapeOf(cfg));
      const cache = new KvCache(device, cfg, { maxSeqs: 3, maxContext: 64, numBlocks: 8 });
      const rng = new Rng(3);
      const blocks = shuffled(rng, 8);
      const tables = [blocks.slice(0, 2), blocks.slice(2, 5)];
      tables.forEach((t, i) => cache.writeBlockTable(i, t));

      // The CPU mirror of layer `layer`'s cache, with the same block tables.
      const floats = (cache.numBlocks * cache.blockBytes) / 4;
      const bt = new Uint32Array(cache.maxSeqs * cache.maxBlocksPerSeq);
      tables.forEach((t, i) => bt.set(t, i * cache.maxBlocksPerSeq));
      const mirror: PagedKv = {
        k: new Float32Array(floats),
        v: new Float32Array(floats),
        blockTable: bt,
        maxBlocksPerSeq: cache.maxBlocksPerSeq,
        NKV,
        HS,
      };
      const byName = new Map(tensors.map((t) => [t.name, t]));
      const n = layerNames(layer);
      const norm = cfg.qkNorm ? { q: tensorToF32(byName.get(n.qNorm)!), k: tensorToF32(byName.get(n.kNorm)!), eps: cfg.rmsNormEps } : null;
      const invFreq = ropeInvFreq(cfg);
      const io = { k: cache.k[layer], v: cache.v[layer], blockTable: cache.blockTable, ...qkvPrepWeights(weights, layer) };

      const step = async (rows: BatchRow[], decode: boolean) => {
        const T = rows.reduce((a, r) => a + r.count, 0);
        const B = rows.length;
        const qkv = rng.normals(T * (NH + 2 * NKV) * HS);
        const qkvBuf = uploadStorage(device, qkv, 'qkv');
        const qBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'q');
        const outBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'out');
        const rowsBuf = uploadStorage(device, packBatchRows(rows), 'rows');
        const plan = k.decode.plan(Math.max(...rows.map((r) => r.pos + 1)), B);
        const partials = uploadStorage(device, new Float32Array(B * NH * plan.numSplits * (HS + 2)), 'partials');
        const dims = { T, B, maxBlocksPerSeq: cache.maxBlocksPerSeq };
        const calls = k.qkvPrep.encode({ ...io, q: qBuf, qkv: qkvBuf, rows: rowsBuf, ...dims });
        if (decode) {
          calls.push(...k.decode.encode({ ...io, q: qBuf, partials, rows: rowsBuf, B, maxBlocksPerSeq: cache.maxBlocksPerSeq, plan }));
          calls.push(...k.merge.encode({ out: outBuf, partials, B, NH, HS, numSplits: plan.numSplits }));
        } else {
          const maxCount = Math.max(...rows.map((r) => r.count));
          calls.push(...k.prefill.encode({ ...io, q: qBuf, out: outBuf, rows: rowsBuf, ...dims, maxCount }));
        }
        await runCalls(gpu, calls);

        const q = new Float32Array(T * NH * HS);
        qkvPrepForward(q, mirror, qkv, norm, invFreq, rows, NH);
        const want = new Float32Array(T * NH * HS);
        if (decode) {
          const p = new Float32Array(B * NH * plan.numSplits * (HS + 2));
          attentionDecodePartials(p, q, mirror, rows, NH, plan.numSplits, plan.splitLen);
          attentionMergePartials(want, p, B, NH, plan.numSplits, HS);
        } else {
          attentionPrefillPaged(want, null, q, mirror, rows, NH);
        }
        expectClose(await readF32(device, qBuf, q.length), q, TOL, `${arch} q (${decode ? 'decode' : 'prefill'})`);
        expectClose(await readF32(device, outBuf, want.length), want, TOL, `${arch} attention (${decode ? 'decode' : 'prefill'})`);
        for (const b of [qkvBuf, qBuf, outBuf, rowsBuf, partials]) b.destroy();
      };

      const row = (seq: number, pos: number, count: number): BatchRow => ({ seq, pos, adapter: NO_ADAPTER, count });
      await step([row(0, 0, 19), row(1, 0, 33)], false);
      await step([row(1, 33, 1), row(0, 19, 1)], true);
      expectClose(await readF32(device, cache.k[layer], floats), mirror.k, TOL, `${arch} k cache`);
      cache.destroy();
      weights.destroy();
    });
  }
});
