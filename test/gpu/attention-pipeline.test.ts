/**
 * The attention kernels chained as the generation core will chain them, on one KvCache:
 * chunked prefill of two prompts in one batch (the second chunk reusing the cached prefix), `n = 2`
 * choices forked from one prompt (full blocks shared, the partial block copied on write), then
 * decode steps for all three sequences crossing a block boundary. Every attention output is
 * compared with naive attention over each sequence's K/V kept contiguously on the CPU (built with
 * the dense references rmsnorm and rope, never through the paged layout), so paging, prefix reuse
 * and the fork are checked end to end. A minimal block allocator stands in for the block manager.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { AttentionMerge } from '../../src/engine/kernels/attention-merge';
import { DecodeAttention } from '../../src/engine/kernels/attention-decode';
import { PrefillAttention } from '../../src/engine/kernels/attention-prefill';
import { QkvPrep } from '../../src/engine/kernels/qkv-prep';
import { encodeFromF32, roundToDtype } from '../../src/engine/tensor/dtype';
import { KvCache } from '../../src/engine/model/kv/kv-cache';
import { KV_BLOCK, NO_ADAPTER, packBatchRows, type BatchRow } from '../../src/engine/kernels/kv-layout';
import { createRopeTableBuffer, ropeInvFreq } from '../../src/engine/model/config/rope';
import { attentionForward } from '../../src/engine/reference/attention';
import { expectClose } from '../../src/engine/reference/check';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { ropeForward } from '../../src/engine/reference/rope';
import { checked, openGpu, readF32, Rng, runCalls, shuffled, uploadStorage, type Gpu } from './attention-fixtures';

let gpu: Gpu;
beforeAll(async () => {
  gpu = await openGpu();
});
afterAll(() => gpu?.device.destroy());

const NH = 6;
const NKV = 2;
const HS = 64;
const EPS = 1e-6;
const TOL = { atol: 3e-5, rtol: 2e-4 };

/** One sequence as the CPU sees it: its block-table row, blocks, and contiguous prepared K/V. */
interface Seq {
  row: number;
  blocks: number[];
  k: number[][]; // per position: [NKV * HS]
  v: number[][];
}

describe('attention pipeline', () => {
  it('chunked prefill with a cached prefix, an n = 2 fork with copy-on-write, and decode steps', async () => {
    const { device } = gpu;
    const rng = new Rng(2024);
    const cache = new KvCache(device, { numLayers: 1, numKvHeads: NKV, headDim: HS }, { maxSeqs: 4, maxContext: 64, numBlocks: 16 });
    const free = shuffled(rng, cache.numBlocks); // the minimal allocator: a shuffled free list
    const rope = { headDim: HS, ropeTheta: 10000, ropeScaling: null };
    const invFreq = ropeInvFreq(rope);
    const table = createRopeTableBuffer(device, rope, 64);
    const qNorm = roundToDtype(rng.uniforms(HS, 0.5, 1.5), 'bf16');
    const kNorm = roundToDtype(rng.uniforms(HS, 0.5, 1.5), 'bf16');
    const qNormBuf = uploadStorage(device, encodeFromF32(qNorm, 'bf16'), 'q_norm');
    const kNormBuf = uploadStorage(device, encodeFromF32(kNorm, 'bf16'), 'k_norm');

    const prep = await checked(device, () => new QkvPrep(gpu, { NH, NKV, HS, qkNorm: { dtype: 'bf16', eps: EPS } }));
    const prefill = await checked(device, () => new PrefillAttention(gpu, { NH, NKV, HS }));
    const decode = await checked(device, () => new DecodeAttention(gpu, { NH, NKV, HS }, { minSplitLen: 16 }));
    const merge = await checked(device, () => new AttentionMerge(gpu));

    const seqs: Seq[] = [];
    const newSeq = (row: number): Seq => {
      const s: Seq = { row, blocks: [], k: [], v: [] };
      seqs.push(s);
      return s;
    };
    /** Gives `s` blocks up to `len` tokens and writes its block-table row. */
    const grow = (s: Seq, len: number) => {
      while (s.blocks.length * KV_BLOCK < len) s.blocks.push(free.pop()!);
      cache.writeBlockTable(s.row, s.blocks);
    };

    /**
     * One step: `parts` rows of new tokens; random QKV projections; returns the GPU attention
     * output per token and checks it against naive attention over the contiguous CPU K/V.
     */
    const step = async (parts: Array<{ s: Seq; count: number }>, kind: 'prefill' | 'decode') => {
      const rows: BatchRow[] = parts.map(({ s, count }) => ({ seq: s.row, pos: s.k.length, adapter: NO_ADAPTER, count }));
      for (const { s, count } of parts) grow(s, s.k.length + count);
      const T = rows.reduce((a, r) => a + r.count, 0);
      const width = (NH + 2 * NKV) * HS;
      const qkv = rng.normals(T * width, 1.5);

      // CPU: q/k norm + RoPE with the dense references, K/V appended contiguously.
      const qPrepared = new Float32Array(T * NH * HS);
      let t = 0;
      for (const { s, count } of parts) {
        for (let i = 0; i < count; i++, t++) {
          const pos = s.k.length;
          const q = qkv.slice(t * width, t * width + NH * HS);
          const k = qkv.slice(t * width + NH * HS, t * width + (NH + NKV) * HS);
          rmsnormForward(q, null, q, qNorm, NH, HS, EPS);
          rmsnormForward(k, null, k, kNorm, NKV, HS, EPS);
          ropeForward(q, q, [pos], invFreq, 1, NH, HS);
          ropeForward(k, k, [pos], invFreq, 1, NKV, HS);
          qPrepared.set(q, t * NH * HS);
          s.k.push(Array.from(k));
          s.v.push(Array.from(qkv.slice(t * width + (NH + NKV) * HS, (t + 1) * width)));
        }
      }
      const want = new Float32Array(T * NH * HS);
      t = 0;
      for (const { s, count } of parts) {
        const S = s.k.length;
        attentionForward(
          want.subarray(t * NH * HS, (t + count) * NH * HS),
          qPrepared.subarray(t * NH * HS, (t + count) * NH * HS),
          Float32Array.from(s.k.flat()),
          Float32Array.from(s.v.flat()),
          count,
          S,
          NH,
          NKV,
          HS,
          S - count,
        );
        t += count;
      }

      // GPU: qkv-prep writes q and the cache, then prefill or decode attention reads it.
      const qkvBuf = uploadStorage(device, qkv, 'qkv');
      const qBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'q');
      const outBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'out');
      const rowsBuf = uploadStorage(device, packBatchRows(rows), 'rows');
      const B = rows.length;
      const plan = decode.plan(Math.max(...rows.map((r) => r.pos + 1)), B);
      const partials = uploadStorage(device, new Float32Array(B * NH * plan.numSplits * (HS + 2)), 'partials');
      const kv = { k: cache.k[0], v: cache.v[0], blockTable: cache.blockTable, rows: rowsBuf };
      const calls = prep.encode({
        ...kv,
        q: qBuf,
        qkv: qkvBuf,
        qNorm: qNormBuf,
        kNorm: kNormBuf,
        ropeTable: table,
        T,
        B,
        maxBlocksPerSeq: cache.maxBlocksPerSeq,
      });
      if (kind === 'prefill') {
        const maxCount = Math.max(...rows.map((r) => r.count));
        calls.push(...prefill.encode({ ...kv, q: qBuf, out: outBuf, B, T, maxCount, maxBlocksPerSeq: cache.maxBlocksPerSeq }));
      } else {
        calls.push(...decode.encode({ ...kv, q: qBuf, partials, B, maxBlocksPerSeq: cache.maxBlocksPerSeq, plan }));
        calls.push(...merge.encode({ out: outBuf, partials, B, NH, HS, numSplits: plan.numSplits }));
      }
      await runCalls(gpu, calls);
      const got = await readF32(device, outBuf, T * NH * HS);
      for (const b of [qkvBuf, qBuf, outBuf, rowsBuf, partials]) b.destroy();
      return { got, want };
    };

    const a = newSeq(2);
    const b = newSeq(0);
    // Prefill chunk 1: A's first 20 tokens beside B's whole 14-token prompt.
    let r = await step(
      [
        { s: a, count: 20 },
        { s: b, count: 14 },
      ],
      'prefill',
    );
    expectClose(r.got, r.want, TOL, 'prefill chunk 1');
    // Prefill chunk 2: A's next 17 tokens attend to the 20 cached ones (37 in all: 2 full blocks + 5).
    r = await step([{ s: a, count: 17 }], 'prefill');
    expectClose(r.got, r.want, TOL, 'prefill chunk 2 (cached prefix)');

    // n = 2: the second choice shares A's full blocks and gets a copy of the partial block.
    const a2 = newSeq(3);
    const partial = a.blocks[2];
    const copy = free.pop()!;
    a2.blocks = [a.blocks[0], a.blocks[1], copy];
    a2.k = a.k.map((x) => x.slice());
    a2.v = a.v.map((x) => x.slice());
    cache.writeBlockTable(a2.row, a2.blocks);
    const encoder = device.createCommandEncoder();
    cache.recordCopyBlocks(encoder, [[partial, copy]]);
    device.queue.submit([encoder.finish()]);

    // Decode: the two choices diverge; B crosses into its second block at position 16.
    for (let s = 0; s < 4; s++) {
      r = await step(
        [
          { s: a, count: 1 },
          { s: b, count: 1 },
          { s: a2, count: 1 },
        ],
        'decode',
      );
      expectClose(r.got, r.want, TOL, `decode step ${s}`);
    }
    cache.destroy();
    for (const x of [table, qNormBuf, kNormBuf]) x.destroy();
  });
});
