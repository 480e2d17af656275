/**
 * Prefill attention on the GPU (tiled FlashAttention-2 kernel under two workgroup-memory budgets,
 * and the naive kernel) against reference/attention-paged.ts attentionPrefillPaged, which gathers
 * each sequence's K/V and runs the naive causal GQA attention of reference/attention.ts. Output
 * and the optional logsumexp. Shuffled blocks, several rows with cached prefixes (pos > 0), GQA
 * 1/3/7, head dims 64/128/48/80, contexts 1, 15, 16, 17 and 300+.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrefillAttention, prefillTiling, type PrefillAttentionOptions } from '../../src/engine/kernels/attention-prefill';
import { attentionPrefillPaged } from '../../src/engine/reference/attention-paged';
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
  /** Per row: cached prefix length (pos) and new tokens (count). */
  rows: Array<{ pos: number; count: number }>;
}

const CASES: Case[] = [
  { name: 'MHA, HS 64, one prompt of 17 from position 0', NH: 4, NKV: 4, HS: 64, rows: [{ pos: 0, count: 17 }] },
  {
    name: 'GQA 3, HS 128, three rows with prefixes (contexts 17, 16, 40)',
    NH: 6,
    NKV: 2,
    HS: 128,
    rows: [
      { pos: 16, count: 1 },
      { pos: 5, count: 11 },
      { pos: 0, count: 40 },
    ],
  },
  {
    name: 'GQA 7, HS 48, a 310-token context with a 290-token cached prefix, and a 15-token prompt',
    NH: 7,
    NKV: 1,
    HS: 48,
    rows: [
      { pos: 290, count: 20 },
      { pos: 0, count: 15 },
    ],
  },
  {
    name: 'GQA 2, HS 80, single tokens (context 1 and 16) beside a 33-token chunk',
    NH: 4,
    NKV: 2,
    HS: 80,
    rows: [
      { pos: 0, count: 1 },
      { pos: 15, count: 1 },
      { pos: 7, count: 33 },
    ],
  },
  // The test models' shapes (reference/random-model.ts): one thread per query row, no lane reduction.
  {
    name: 'GQA 3, HS 16, prefix 20 + 13',
    NH: 6,
    NKV: 2,
    HS: 16,
    rows: [
      { pos: 20, count: 13 },
      { pos: 0, count: 2 },
    ],
  },
  { name: 'GQA 3, HS 24, 18 tokens', NH: 6, NKV: 2, HS: 24, rows: [{ pos: 0, count: 18 }] },
];

// The tiled kernel at the device's workgroup memory and at the 16 KiB WebGPU default (where the
// tiling differs), and the naive kernel. SwiftShader compiles each tiled pipeline in seconds, so
// the 16 KiB tiling runs where it changes the tile.
function variants(HS: number, gpu: Gpu): Array<[string, PrefillAttentionOptions]> {
  const list: Array<[string, PrefillAttentionOptions]> = [['tiled', {}]];
  const small = prefillTiling(HS, 16384);
  if (small.keysPerTile !== prefillTiling(HS, gpu.maxWorkgroupStorage).keysPerTile) {
    list.push([`tiled, 16 KiB (${small.keysPerTile} keys per tile)`, { workgroupStorageBytes: 16384 }]);
  }
  list.push(['naive', { variant: 'naive' }]);
  return list;
}

const TOL = { atol: 2e-5, rtol: 1e-4 };

describe('prefill attention', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const { device } = gpu;
      const { NH, NKV, HS } = c;
      const rng = new Rng(7 + HS + 13 * NH);
      // Sequences listed in the batch in another order than their block-table rows.
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
      const q = rng.normals(T * NH * HS);
      const want = new Float32Array(T * NH * HS);
      const wantLse = new Float32Array(T * NH);
      attentionPrefillPaged(want, wantLse, q, layout.kv, rows, NH);

      const gkv = uploadKv(device, layout.kv);
      const qBuf = uploadStorage(device, q, 'q');
      const rowsBuf = uploadRows(device, rows);
      for (const [label, opts] of variants(HS, gpu)) {
        const attn = await checked(device, () => new PrefillAttention(gpu, { NH, NKV, HS }, opts));
        const out = uploadStorage(device, rng.normals(T * NH * HS), 'out'); // stale garbage to overwrite
        const lse = uploadStorage(device, new Float32Array(T * NH), 'lse');
        const outNoLse = uploadStorage(device, new Float32Array(T * NH * HS), 'out2');
        const io = { q: qBuf, ...gkv, rows: rowsBuf };
        const dims = { B, T, maxCount, maxBlocksPerSeq: layout.kv.maxBlocksPerSeq };
        await runCalls(gpu, [...attn.encode({ ...io, out, lse, ...dims }), ...attn.encode({ ...io, out: outNoLse, ...dims })]);
        expectClose(await readF32(device, out, want.length), want, TOL, `out (${label})`);
        expectClose(await readF32(device, lse, wantLse.length), wantLse, TOL, `lse (${label})`);
        expectClose(await readF32(device, outNoLse, want.length), want, TOL, `out without lse (${label})`);
        for (const b of [out, lse, outNoLse]) b.destroy();
      }
      for (const b of [gkv.k, gkv.v, gkv.blockTable, qBuf, rowsBuf]) b.destroy();
    });
  }

  it('sizes tiles to the workgroup memory it is given', () => {
    for (const HS of [48, 64, 80, 128, 256]) {
      for (const budget of [16384, 32768]) {
        const t = prefillTiling(HS, budget);
        expect(t.workgroupSize % t.lanes).toBe(0);
        expect(HS / 4 / t.lanes).toBeLessThanOrEqual(8);
        const bytes = 4 * (2 * t.keysPerTile * HS + (t.lanes > 1 ? t.keysPerTile * t.workgroupSize : 1)) + 16;
        expect(bytes).toBeLessThanOrEqual(budget);
        // The next larger tile would not fit (the largest tile is taken).
        const bigger = 2 * t.keysPerTile;
        if (bigger <= 16) expect(4 * (2 * bigger * HS + (t.lanes > 1 ? bigger * t.workgroupSize : 1)) + 16).toBeGreaterThan(budget);
      }
    }
    expect(prefillTiling(64, 16384).keysPerTile).toBe(16);
    expect(prefillTiling(128, 16384).keysPerTile).toBe(8);
  });
});
