/**
 * Attention backward on the GPU (tiled FlashAttention-2 kernels under the device's and the 16 KiB
 * workgroup-memory budget, and the naive kernels) against reference/attention.ts attentionBackward
 * on each sequence's gathered K/V. dq, dk, dv land in the QKV projection's layout; shuffled KV
 * blocks; several rows of different lengths; GQA 1/2/3/7; head dims 16 to 128; a row with a cached
 * prefix (its dq includes the prefix keys; the prefix keys get no gradient, as documented). One case
 * runs the GPU forward first and feeds its own lse (the `stats` buffer shared with the forward).
 * Also: the same inputs twice give bit-identical gradients (no atomics, fixed summation order).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttentionBackward, attentionBackwardTiling, type AttentionBackwardOptions } from '../../src/engine/kernels/attention-backward';
import { PrefillAttention } from '../../src/engine/kernels/attention-prefill';
import { attentionBackward } from '../../src/engine/reference/attention';
import { attentionPrefillPaged, kvGatherPaged } from '../../src/engine/reference/attention-paged';
import { expectClose } from '../../src/engine/reference/check';
import {
  batchRows,
  checked,
  makeLayout,
  openGpu,
  readF32,
  Rng,
  runCalls,
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
  rows: Array<{ pos: number; count: number }>;
  /** Take lse and the output from the GPU forward instead of the reference. */
  gpuForward?: boolean;
}

const CASES: Case[] = [
  {
    name: 'MHA, HS 64, one sequence of 17, lse from the GPU forward',
    NH: 4,
    NKV: 4,
    HS: 64,
    rows: [{ pos: 0, count: 17 }],
    gpuForward: true,
  },
  {
    name: 'GQA 3, HS 128, sequences of 1, 11 and 40, and one with a 16-token cached prefix',
    NH: 6,
    NKV: 2,
    HS: 128,
    rows: [
      { pos: 0, count: 1 },
      { pos: 0, count: 11 },
      { pos: 16, count: 3 },
      { pos: 0, count: 40 },
    ],
  },
  {
    name: 'GQA 7, HS 48, sequences of 37 and 5',
    NH: 7,
    NKV: 1,
    HS: 48,
    rows: [
      { pos: 0, count: 37 },
      { pos: 0, count: 5 },
    ],
  },
  {
    name: 'GQA 2, HS 80, sequences of 33 and 1',
    NH: 4,
    NKV: 2,
    HS: 80,
    rows: [
      { pos: 0, count: 33 },
      { pos: 0, count: 1 },
    ],
  },
  // The test models' shapes (reference/random-model.ts): one lane per row (HS 16), three (HS 24 -> 2).
  { name: 'GQA 3, HS 16 (the Llama test model), 13 tokens', NH: 6, NKV: 2, HS: 16, rows: [{ pos: 0, count: 13 }] },
  {
    name: 'GQA 3, HS 24 (the Qwen3 test model), 18 and 7 tokens',
    NH: 6,
    NKV: 2,
    HS: 24,
    rows: [
      { pos: 0, count: 18 },
      { pos: 0, count: 7 },
    ],
  },
];

const TOL = { atol: 5e-5, rtol: 5e-4 };

// The tiled kernels at the tiles this device gets (on SwiftShader: 4-key / 4-query tiles, chosen
// for compile time), at the larger tiles real GPUs get (on the small head dims, where SwiftShader
// compiles them in seconds: 16-tiles without lane partials, 8-tiles with), and the naive kernels.
function variants(HS: number): Array<[string, AttentionBackwardOptions]> {
  const list: Array<[string, AttentionBackwardOptions]> = [['tiled', {}]];
  if (HS === 16 && gpu.softwareAdapter) list.push(['tiled, 16-key and 16-query tiles', { maxTile: 16 }]);
  if (HS === 24 && gpu.softwareAdapter) list.push(['tiled, 8-key and 8-query tiles', { maxTile: 8 }]);
  if (!gpu.softwareAdapter && HS === 64) list.push(['tiled, 16 KiB', { workgroupStorageBytes: 16384 }]);
  list.push(['naive', { variant: 'naive' }]);
  return list;
}

describe('attention backward', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const { device } = gpu;
      const { NH, NKV, HS } = c;
      const rng = new Rng(11 + HS + 17 * NH);
      const layout = makeLayout(
        rng,
        c.rows.map((r) => r.pos + r.count),
        NKV,
        HS,
      );
      const rows = batchRows(
        layout,
        c.rows.map((r, i) => ({ seq: i, ...r })),
      );
      const B = rows.length;
      const T = rows.reduce((a, r) => a + r.count, 0);
      const maxCount = Math.max(...rows.map((r) => r.count));
      const W = (NH + 2 * NKV) * HS;
      const q = rng.normals(T * NH * HS);
      const dout = rng.normals(T * NH * HS);
      const out = new Float32Array(T * NH * HS);
      const lse = new Float32Array(T * NH);
      attentionPrefillPaged(out, lse, q, layout.kv, rows, NH);

      // Reference: per sequence, gathered K/V; keys of the batch's own tokens go to dqkv.
      const want = new Float32Array(T * W);
      let t0 = 0;
      for (const row of rows) {
        const S = row.pos + row.count;
        const k = new Float32Array(S * NKV * HS);
        const v = new Float32Array(S * NKV * HS);
        kvGatherPaged(k, v, layout.kv, row.seq, S);
        const dq = new Float32Array(row.count * NH * HS);
        const dk = new Float32Array(S * NKV * HS);
        const dv = new Float32Array(S * NKV * HS);
        const span = (a: Float32Array) => a.subarray(t0 * NH * HS, (t0 + row.count) * NH * HS);
        attentionBackward(dq, dk, dv, span(dout), span(q), k, v, row.count, S, NH, NKV, HS, row.pos);
        for (let t = 0; t < row.count; t++) {
          const dst = (t0 + t) * W;
          want.set(dq.subarray(t * NH * HS, (t + 1) * NH * HS), dst);
          want.set(dk.subarray((row.pos + t) * NKV * HS, (row.pos + t + 1) * NKV * HS), dst + NH * HS);
          want.set(dv.subarray((row.pos + t) * NKV * HS, (row.pos + t + 1) * NKV * HS), dst + (NH + NKV) * HS);
        }
        t0 += row.count;
      }

      const gkv = uploadKv(device, layout.kv);
      const rowsBuf = uploadRows(device, rows);
      const qBuf = uploadStorage(device, q, 'q');
      const doutBuf = uploadStorage(device, dout, 'dout');
      const dims = { B, T, maxCount, maxBlocksPerSeq: layout.kv.maxBlocksPerSeq };
      // stats = [lse | scratch for D]; the forward writes the first half when it runs here.
      const stats = uploadStorage(device, new Float32Array([...lse, ...rng.normals(T * NH)]), 'stats');
      let outBuf = uploadStorage(device, out, 'out');
      if (c.gpuForward) {
        outBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'out');
        device.queue.writeBuffer(stats, 0, new Float32Array(T * NH));
        const fwd = await checked(device, () => new PrefillAttention(gpu, { NH, NKV, HS }));
        await runCalls(gpu, [
          ...fwd.encode({
            out: outBuf,
            lse: { buffer: stats, offset: 0, size: T * NH * 4 },
            q: qBuf,
            ...gkv,
            rows: rowsBuf,
            ...dims,
          }),
        ]);
      }
      for (const [label, opts] of variants(HS)) {
        const kernel = await checked(device, () => new AttentionBackward(gpu, { NH, NKV, HS }, opts));
        const results: Float32Array[] = [];
        for (let run = 0; run < (label === 'tiled' ? 2 : 1); run++) {
          const dqkv = uploadStorage(device, rng.normals(T * W), 'dqkv'); // stale values to overwrite
          const io = { dqkv, stats, dout: doutBuf, out: outBuf, q: qBuf, ...gkv, rows: rowsBuf };
          await runCalls(gpu, kernel.encode({ ...io, ...dims }));
          results.push(await readF32(device, dqkv, T * W));
          dqkv.destroy();
        }
        expectClose(results[0], want, TOL, `dqkv (${label})`);
        if (results.length === 2) expect(results[1], 'a second run is bit-identical').toEqual(results[0]);
      }
      for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf, doutBuf, stats, outBuf]) b.destroy();
    });
  }

  it('sizes tiles to the workgroup memory it is given', () => {
    for (const HS of [16, 24, 48, 64, 80, 128, 256]) {
      for (const budget of [16384, 32768]) {
        const t = attentionBackwardTiling(HS, budget);
        expect(t.workgroupSize % t.lanes).toBe(0);
        expect(HS / 4 / t.lanes).toBeLessThanOrEqual(4);
        const part = (n: number) => 8 * (t.lanes > 1 ? n * t.workgroupSize : 1);
        expect(4 * 2 * t.keysPerTile * HS + part(t.keysPerTile) + 16).toBeLessThanOrEqual(budget);
        expect(4 * 2 * t.queriesPerTile * HS + 12 * t.queriesPerTile + part(t.queriesPerTile) + 16).toBeLessThanOrEqual(budget);
      }
    }
    expect(attentionBackwardTiling(64, 16384)).toMatchObject({ lanes: 4, keysPerTile: 8, queriesPerTile: 8 });
    expect(attentionBackwardTiling(64, 32768)).toMatchObject({ lanes: 4, keysPerTile: 16, queriesPerTile: 16 });
    expect(attentionBackwardTiling(64, 32768, 4)).toMatchObject({ keysPerTile: 4, queriesPerTile: 4 });
    expect(attentionBackwardTiling(24, 32768, 16)).toMatchObject({ lanes: 2, keysPerTile: 16, queriesPerTile: 16 });
  });
});
