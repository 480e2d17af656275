/**
 * Sliding-window attention on the GPU: prefill (tiled and naive), decode partials and their merge,
 * and the backward (tiled and naive), each with a window, against the references
 * (reference/attention-paged.ts, reference/attention.ts) on random inputs and shuffled KV blocks.
 * In the forward cases the blocks that lie wholly before every query's window hold NaN, as a block
 * freed and reused by another sequence could hold anything: a kernel that reads one fails.
 * Windows 20 (not a block multiple) and 16; contexts up to 3x the window; a cached prefix.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { AttentionBackward } from '../../src/engine/kernels/attention-backward';
import { DecodeAttention } from '../../src/engine/kernels/attention-decode';
import { AttentionMerge } from '../../src/engine/kernels/attention-merge';
import { PrefillAttention } from '../../src/engine/kernels/attention-prefill';
import { firstVisibleKey } from '../../src/engine/model/config/attention-window';
import { KV_BLOCK, type BatchRow } from '../../src/engine/kernels/kv-layout';
import { attentionBackward, attentionForward } from '../../src/engine/reference/attention';
import {
  attentionDecodePartials,
  attentionMergePartials,
  attentionPrefillPaged,
  kvGatherPaged,
  kvOffset,
  type PagedKv,
} from '../../src/engine/reference/attention-paged';
import { expectClose } from '../../src/engine/reference/check';
import * as fx from './attention-fixtures';

let gpu: fx.Gpu;
beforeAll(async () => {
  gpu = await fx.openGpu();
});
afterAll(() => gpu?.device.destroy());

const TOL = { atol: 3e-5, rtol: 2e-4 };

/** Fills with NaN every block of each row that lies wholly before the window of the row's first query. */
function poisonDeadBlocks(kv: PagedKv, rows: readonly BatchRow[], window: number): number {
  let poisoned = 0;
  for (const row of rows) {
    const dead = Math.floor(firstVisibleKey(row.pos, window) / KV_BLOCK);
    for (let b = 0; b < dead; b++) {
      for (let h = 0; h < kv.NKV; h++) {
        const at = kvOffset(kv, row.seq, b * KV_BLOCK, h);
        kv.k.fill(NaN, at, at + KV_BLOCK * kv.HS);
        kv.v.fill(NaN, at, at + KV_BLOCK * kv.HS);
      }
      poisoned++;
    }
  }
  return poisoned;
}

function layoutFor(rng: fx.Rng, parts: Array<{ pos: number; count: number }>, NKV: number, HS: number) {
  const layout = fx.makeLayout(
    rng,
    parts.map((r) => r.pos + r.count),
    NKV,
    HS,
  );
  const rows = fx.batchRows(
    layout,
    parts.map((r, i) => ({ seq: i, ...r })),
  );
  return { layout, rows };
}

const SHAPES = [
  { NH: 6, NKV: 2, HS: 16 },
  { NH: 4, NKV: 2, HS: 64 },
];

describe('sliding-window attention', () => {
  for (const { NH, NKV, HS } of SHAPES) {
    it(`prefill, HS ${HS}: chunks at 3x the window over freed blocks, beside a short prompt`, async () => {
      const { device } = gpu;
      const window = 20;
      const rng = new fx.Rng(5 + HS);
      const { layout, rows } = layoutFor(
        rng,
        [
          { pos: 40, count: 20 }, // the last chunk of a 60-token prompt: blocks 0 and 1 are dead
          { pos: 0, count: 45 }, // a whole prompt, longer than the window
          { pos: 0, count: 7 },
        ],
        NKV,
        HS,
      );
      if (poisonDeadBlocks(layout.kv, rows, window) === 0) throw new Error('the case frees no block');
      const T = rows.reduce((a, r) => a + r.count, 0);
      const q = rng.normals(T * NH * HS);
      const want = new Float32Array(T * NH * HS);
      const wantLse = new Float32Array(T * NH);
      attentionPrefillPaged(want, wantLse, q, layout.kv, rows, NH, window);

      const gkv = fx.uploadKv(device, layout.kv);
      const qBuf = fx.uploadStorage(device, q, 'q');
      const rowsBuf = fx.uploadRows(device, rows);
      for (const variant of ['tiled', 'naive'] as const) {
        const attn = await fx.checked(device, () => new PrefillAttention(gpu, { NH, NKV, HS }, { variant }));
        const out = fx.uploadStorage(device, new Float32Array(T * NH * HS), 'out');
        const lse = fx.uploadStorage(device, new Float32Array(T * NH), 'lse');
        const dims = { B: rows.length, T, maxCount: 45, maxBlocksPerSeq: layout.kv.maxBlocksPerSeq, window };
        await fx.runCalls(gpu, [...attn.encode({ out, lse, q: qBuf, ...gkv, rows: rowsBuf, ...dims })]);
        expectClose(await fx.readF32(device, out, want.length), want, TOL, `out (${variant})`);
        expectClose(await fx.readF32(device, lse, wantLse.length), wantLse, TOL, `lse (${variant})`);
        out.destroy();
        lse.destroy();
      }
      for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf]) b.destroy();
    });
  }

  it('decode: splits over the window, merged, against attention over the window only', async () => {
    const { device } = gpu;
    const { NH, NKV, HS } = SHAPES[0];
    const window = 20;
    const rng = new fx.Rng(77);
    const contexts = [60, 21, 5];
    const { layout, rows } = layoutFor(
      rng,
      contexts.map((c) => ({ pos: c - 1, count: 1 })),
      NKV,
      HS,
    );
    poisonDeadBlocks(layout.kv, rows, window);
    const B = rows.length;
    const q = rng.normals(B * NH * HS);
    // The independent oracle: full attention over only the window's keys, gathered contiguously.
    const want = new Float32Array(B * NH * HS);
    rows.forEach((row, b) => {
      const first = firstVisibleKey(row.pos, window);
      const S = row.pos + 1 - first;
      const kAll = new Float32Array((row.pos + 1) * NKV * HS);
      const vAll = new Float32Array((row.pos + 1) * NKV * HS);
      kvGatherPaged(kAll, vAll, layout.kv, row.seq, row.pos + 1, first);
      const span = (a: Float32Array) => a.subarray(first * NKV * HS);
      attentionForward(
        want.subarray(b * NH * HS, (b + 1) * NH * HS),
        q.subarray(b * NH * HS, (b + 1) * NH * HS),
        span(kAll),
        span(vAll),
        1,
        S,
        NH,
        NKV,
        HS,
        S - 1,
      );
    });

    const gkv = fx.uploadKv(device, layout.kv);
    const qBuf = fx.uploadStorage(device, q, 'q');
    const rowsBuf = fx.uploadRows(device, rows);
    const decode = await fx.checked(device, () => new DecodeAttention(gpu, { NH, NKV, HS }, { workgroupStorageBytes: 4096 }));
    const merge = await fx.checked(device, () => new AttentionMerge(gpu));
    // A plan for the window's keys (what the runner plans when every layer slides), and 16-key splits
    // over the whole context (a hybrid model's plan: the splits past the window are empty).
    for (const plan of [decode.plan(window, B), { splitLen: KV_BLOCK, numSplits: Math.ceil(60 / KV_BLOCK) }]) {
      const floats = B * NH * plan.numSplits * (HS + 2);
      const got = await fx.runSplitDecode(gpu, decode, merge, rng, {
        q: qBuf,
        kv: gkv,
        rows: rowsBuf,
        B,
        NH,
        HS,
        maxBlocksPerSeq: layout.kv.maxBlocksPerSeq,
        plan,
        window,
      });
      const wantPartials = new Float32Array(floats);
      attentionDecodePartials(wantPartials, q, layout.kv, rows, NH, plan.numSplits, plan.splitLen, window);
      expectClose(got.partials, wantPartials, TOL, `partials (${plan.numSplits} x ${plan.splitLen})`);
      const refMerged = new Float32Array(B * NH * HS);
      attentionMergePartials(refMerged, wantPartials, B, NH, plan.numSplits, HS);
      expectClose(refMerged, want, TOL, `reference merge (${plan.numSplits} x ${plan.splitLen})`);
      expectClose(got.out, want, TOL, `merged output (${plan.numSplits} x ${plan.splitLen})`);
    }
    for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf]) b.destroy();
  });

  it('backward (tiled and naive) with window 16, sequences of 50 and 9, against the reference', async () => {
    const { device } = gpu;
    const { NH, NKV, HS } = SHAPES[0];
    const window = 16;
    const rng = new fx.Rng(31);
    const { layout, rows } = layoutFor(
      rng,
      [
        { pos: 0, count: 50 },
        { pos: 0, count: 9 },
      ],
      NKV,
      HS,
    );
    const T = 59;
    const W = (NH + 2 * NKV) * HS;
    const q = rng.normals(T * NH * HS);
    const dout = rng.normals(T * NH * HS);
    const out = new Float32Array(T * NH * HS);
    const lse = new Float32Array(T * NH);
    attentionPrefillPaged(out, lse, q, layout.kv, rows, NH, window);
    const want = new Float32Array(T * W);
    let t0 = 0;
    for (const row of rows) {
      const S = row.count;
      const k = new Float32Array(S * NKV * HS);
      const v = new Float32Array(S * NKV * HS);
      kvGatherPaged(k, v, layout.kv, row.seq, S);
      const dq = new Float32Array(S * NH * HS);
      const dk = new Float32Array(S * NKV * HS);
      const dv = new Float32Array(S * NKV * HS);
      const span = (a: Float32Array) => a.subarray(t0 * NH * HS, (t0 + S) * NH * HS);
      attentionBackward(dq, dk, dv, span(dout), span(q), k, v, S, S, NH, NKV, HS, 0, window);
      for (let t = 0; t < S; t++) {
        want.set(dq.subarray(t * NH * HS, (t + 1) * NH * HS), (t0 + t) * W);
        want.set(dk.subarray(t * NKV * HS, (t + 1) * NKV * HS), (t0 + t) * W + NH * HS);
        want.set(dv.subarray(t * NKV * HS, (t + 1) * NKV * HS), (t0 + t) * W + (NH + NKV) * HS);
      }
      t0 += S;
    }

    const gkv = fx.uploadKv(device, layout.kv);
    const rowsBuf = fx.uploadRows(device, rows);
    const qBuf = fx.uploadStorage(device, q, 'q');
    const doutBuf = fx.uploadStorage(device, dout, 'dout');
    const outBuf = fx.uploadStorage(device, out, 'out');
    const stats = fx.uploadStorage(device, new Float32Array([...lse, ...new Float32Array(T * NH)]), 'stats');
    for (const variant of ['tiled', 'naive'] as const) {
      const kernel = await fx.checked(device, () => new AttentionBackward(gpu, { NH, NKV, HS }, { variant }));
      const dqkv = fx.uploadStorage(device, rng.normals(T * W), 'dqkv');
      const io = { dqkv, stats, dout: doutBuf, out: outBuf, q: qBuf, ...gkv, rows: rowsBuf };
      await fx.runCalls(gpu, kernel.encode({ ...io, B: 2, T, maxCount: 50, maxBlocksPerSeq: layout.kv.maxBlocksPerSeq, window }));
      expectClose(await fx.readF32(device, dqkv, T * W), want, { atol: 5e-5, rtol: 5e-4 }, `dqkv (${variant})`);
      dqkv.destroy();
    }
    for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf, doutBuf, stats, outBuf]) b.destroy();
  });
});
