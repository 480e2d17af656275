/**
 * Decode attention (split partials) and the merge on the GPU, against the references: the partials
 * against reference/attention-paged.ts attentionDecodePartials (same split definition), and the
 * merged output against naive causal GQA attention (reference/attention.ts) over the gathered K/V,
 * an independent path. Shuffled blocks, several rows of different lengths, GQA 1/3/7, head dims
 * 64/128/48/80, split counts 1 and many, the 16 KiB default workgroup memory and the device's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttentionMerge } from '../../src/engine/kernels/attention-merge';
import {
  DecodeAttention,
  decodeMaxSplitLen,
  decodePartialsFloats,
  planDecodeSplits,
  type DecodeSplitPlan,
} from '../../src/engine/kernels/attention-decode';
import { KV_BLOCK } from '../../src/engine/kernels/kv-layout';
import { attentionForward } from '../../src/engine/reference/attention';
import { attentionDecodePartials, attentionMergePartials, kvGatherPaged } from '../../src/engine/reference/attention-paged';
import { expectClose } from '../../src/engine/reference/check';
import {
  batchRows,
  checked,
  makeLayout,
  openGpu,
  Rng,
  runSplitDecode,
  uploadKv,
  uploadRows,
  uploadStorage,
  type Gpu,
} from './attention-fixtures';

let gpu: Gpu;
beforeAll(async () => {
  gpu = await openGpu();
});
afterAll(() => gpu?.device.destroy());

interface Case {
  name: string;
  NH: number;
  NKV: number;
  HS: number;
  contexts: number[];
  storage?: number;
  /** Also run 16-token splits (a split per block: many splits, not a multiple of the key chunk). */
  blockSplits?: boolean;
}

const CASES: Case[] = [
  { name: 'MHA, HS 64, contexts 1 15 16 17', NH: 4, NKV: 4, HS: 64, contexts: [1, 15, 16, 17], blockSplits: true },
  { name: 'GQA 3, HS 128, 16 KiB, contexts 300 17 1', NH: 6, NKV: 2, HS: 128, contexts: [300, 17, 1], storage: 16384 },
  // Small budgets here also cover splits bounded by workgroup memory rather than the 512 cap (and keep
  // SwiftShader's compile time, which grows with the score rows, short).
  { name: 'GQA 7, HS 48, 12 KiB, contexts 333 64', NH: 7, NKV: 1, HS: 48, contexts: [333, 64], storage: 12288 },
  { name: 'GQA 2, HS 80 (5 lanes per key), context 40', NH: 2, NKV: 1, HS: 80, contexts: [40, 3], storage: 16384, blockSplits: true },
  // The test models' shapes (reference/random-model.ts): one thread per key, no lane reduction.
  { name: 'GQA 3, HS 16, 4 KiB, contexts 70 5', NH: 6, NKV: 2, HS: 16, contexts: [70, 5], storage: 4096, blockSplits: true },
  { name: 'GQA 3, HS 24, context 33', NH: 6, NKV: 2, HS: 24, contexts: [33] },
];

const PARTIAL_TOL = { atol: 2e-5, rtol: 1e-4 };
const OUT_TOL = { atol: 2e-5, rtol: 1e-4 };

describe('decode attention', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const { device } = gpu;
      const { NH, NKV, HS } = c;
      const rng = new Rng(99 + HS * 7 + NH);
      const layout = makeLayout(rng, c.contexts, NKV, HS);
      const B = c.contexts.length;
      // Row b decodes the token at position ctx - 1 (its k, v are already in the cache).
      const rows = batchRows(
        layout,
        c.contexts.map((ctx, i) => ({ seq: i, pos: ctx - 1, count: 1 })),
      );
      const q = rng.normals(B * NH * HS);
      const maxCtx = Math.max(...c.contexts);

      const gkv = uploadKv(device, layout.kv);
      const qBuf = uploadStorage(device, q, 'q');
      const rowsBuf = uploadRows(device, rows);
      const decode = await checked(device, () => new DecodeAttention(gpu, { NH, NKV, HS }, { workgroupStorageBytes: c.storage }));
      const merge = await checked(device, () => new AttentionMerge(gpu));

      // The independent oracle: naive attention of each row's query over its gathered context.
      const wantOut = new Float32Array(B * NH * HS);
      rows.forEach((row, b) => {
        const S = row.pos + 1;
        const k = new Float32Array(S * NKV * HS);
        const v = new Float32Array(S * NKV * HS);
        kvGatherPaged(k, v, layout.kv, row.seq, S);
        attentionForward(
          wantOut.subarray(b * NH * HS, (b + 1) * NH * HS),
          q.subarray(b * NH * HS, (b + 1) * NH * HS),
          k,
          v,
          1,
          S,
          NH,
          NKV,
          HS,
          row.pos,
        );
      });

      // SwiftShader runs many-split plans slowly (a fixed cost per workgroup), so the 16-token
      // splits run on the small cases; every case runs its planned and its longest splits.
      const plans: Array<[string, DecodeSplitPlan]> = [
        ['planned', decode.plan(maxCtx, B)],
        ['longest split', { splitLen: decode.maxSplitLen, numSplits: Math.ceil(maxCtx / decode.maxSplitLen) }],
      ];
      if (c.blockSplits) plans.push(['one block per split', { splitLen: KV_BLOCK, numSplits: Math.ceil(maxCtx / KV_BLOCK) }]);
      for (const [label, plan] of plans) {
        const floats = B * NH * plan.numSplits * (HS + 2);
        const got = await runSplitDecode(gpu, decode, merge, rng, {
          q: qBuf,
          kv: gkv,
          rows: rowsBuf,
          B,
          NH,
          HS,
          maxBlocksPerSeq: layout.kv.maxBlocksPerSeq,
          plan,
        });
        const wantPartials = new Float32Array(floats);
        attentionDecodePartials(wantPartials, q, layout.kv, rows, NH, plan.numSplits, plan.splitLen);
        expectClose(got.partials, wantPartials, PARTIAL_TOL, `partials (${label}, ${plan.numSplits} x ${plan.splitLen})`);
        expectClose(got.out, wantOut, OUT_TOL, `merged output (${label})`);
        // The reference merge agrees with the naive oracle too (the references check each other).
        const refMerged = new Float32Array(B * NH * HS);
        attentionMergePartials(refMerged, wantPartials, B, NH, plan.numSplits, HS);
        expectClose(refMerged, wantOut, OUT_TOL, `reference merge (${label})`);
      }
      for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf]) b.destroy();
    });
  }

  it('plans splits that cover the context, fill the GPU at batch 1 and stay within workgroup memory', () => {
    const shape = { NH: 14, NKV: 2, HS: 64 }; // Qwen2.5-0.5B
    const maxSplitLen = decodeMaxSplitLen(shape, 16384);
    expect(maxSplitLen % KV_BLOCK).toBe(0);
    expect(maxSplitLen).toBeGreaterThanOrEqual(128);
    expect(decodeMaxSplitLen(shape, 4096)).toBeLessThan(maxSplitLen); // less memory, shorter splits
    expect(decodeMaxSplitLen({ NH: 16, NKV: 1, HS: 256 }, 16384)).toBe(0); // does not fit: the constructor refuses it
    const policy = { maxSplitLen, minSplitLen: 64, targetWorkgroups: 256 };
    for (const [ctx, B] of [
      [1, 1],
      [17, 1],
      [4096, 1],
      [32768, 1],
      [4096, 64],
      [300, 8],
    ]) {
      const plan = planDecodeSplits(ctx, B, shape.NKV, policy);
      expect(plan.splitLen % KV_BLOCK).toBe(0);
      expect(plan.splitLen).toBeLessThanOrEqual(maxSplitLen);
      expect(plan.numSplits * plan.splitLen).toBeGreaterThanOrEqual(ctx);
      expect((plan.numSplits - 1) * plan.splitLen).toBeLessThan(ctx); // no split is empty for the longest row
    }
    expect(planDecodeSplits(1, 1, 2, policy).numSplits).toBe(1);
    // Batch 1, long context: the 256 targeted workgroups (2 kv heads x 128 splits), not one per head.
    expect(2 * planDecodeSplits(32768, 1, 2, policy).numSplits).toBeGreaterThanOrEqual(256);
    // Batch 1, 4k context: splits of the minimum length keep the GPU busy.
    expect(planDecodeSplits(4096, 1, 2, policy)).toEqual({ splitLen: 64, numSplits: 64 });
    // A batch that fills the target by itself (128 rows x 2 kv heads) gets one split per row; half
    // of it gets two.
    expect(planDecodeSplits(256, 128, 2, policy).numSplits).toBe(1);
    expect(planDecodeSplits(256, 64, 2, policy).numSplits).toBe(2);
    // The partials sizing covers every plan it promises to.
    const floats = decodePartialsFloats(shape, policy, 8, 4096);
    for (let B = 1; B <= 8; B++) {
      for (const ctx of [1, 100, 1000, 4096])
        expect(B * 14 * planDecodeSplits(ctx, B, 2, policy).numSplits * 66).toBeLessThanOrEqual(floats);
    }
  });
});
