/**
 * QkvPrep on the GPU against reference/attention-paged.ts qkvPrepForward: q out, and the whole
 * K and V cache after the write (the batch's positions changed, every other element untouched),
 * over shuffled blocks, several sequences with cached prefixes, GQA, Qwen3 q/k norm in each dtype.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QkvPrep } from '../../src/engine/kernels/qkv-prep';
import { encodeFromF32, roundToDtype } from '../../src/engine/tensor/dtype';
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { createRopeTableBuffer, ropeFreqs } from '../../src/engine/model/config/rope';
import { qkvPrepForward, type QkNorm } from '../../src/engine/reference/attention-paged';
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
  ROPE_VARIANT_CASES,
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
  norm: DType | null;
  /** Per sequence: cached prefix length and new tokens in this batch. */
  seqs: Array<{ pos: number; count: number }>;
  theta?: number;
  /** Phi-3: rotated dims and LongRoPE; SmolLM3 NoPE layer: rope false. */
  rope?: Partial<ModelConfig> & { layerRope?: boolean };
}

const CASES: Case[] = [
  ...ROPE_VARIANT_CASES.map(({ rows, ...c }) => ({ ...c, seqs: rows })),
  { name: 'MHA HS 64, one row from position 0', NH: 4, NKV: 4, HS: 64, norm: null, seqs: [{ pos: 0, count: 17 }] },
  {
    name: 'GQA 3, HS 128, Qwen3 norm bf16, three rows with prefixes',
    NH: 6,
    NKV: 2,
    HS: 128,
    norm: 'bf16',
    seqs: [
      { pos: 5, count: 11 },
      { pos: 16, count: 1 },
      { pos: 0, count: 33 },
    ],
  },
  {
    name: 'GQA 7, HS 48, Qwen3 norm f16, long position',
    NH: 7,
    NKV: 1,
    HS: 48,
    norm: 'f16',
    seqs: [
      { pos: 300, count: 15 },
      { pos: 2, count: 16 },
    ],
    theta: 10000,
  },
  {
    name: 'norm f32, HS 64',
    NH: 3,
    NKV: 1,
    HS: 64,
    norm: 'f32',
    seqs: [
      { pos: 40, count: 9 },
      { pos: 0, count: 1 },
    ],
  },
];

describe('qkv-prep', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const { device } = gpu;
      const rng = new Rng(1234 + c.HS + c.NH);
      const { NH, NKV, HS } = c;
      const layout = makeLayout(
        rng,
        c.seqs.map((s) => s.pos + s.count),
        NKV,
        HS,
      );
      // The batch lists sequences in an order different from their block-table rows.
      const rows = batchRows(
        layout,
        c.seqs.map((s, i) => ({ seq: i, ...s })),
      );
      const T = c.seqs.reduce((a, s) => a + s.count, 0);
      const qkv = rng.normals(T * (NH + 2 * NKV) * HS, 2);
      const eps = 1e-6;
      let norm: QkNorm | null = null;
      let qNormBuf: GPUBuffer | undefined;
      let kNormBuf: GPUBuffer | undefined;
      if (c.norm) {
        // Weights as the file holds them: rounded to the dtype, packed two per u32 for f16/bf16.
        const qw = roundToDtype(rng.uniforms(HS, 0.5, 1.5), c.norm);
        const kw = roundToDtype(rng.uniforms(HS, 0.5, 1.5), c.norm);
        norm = { q: qw, k: kw, eps };
        qNormBuf = uploadStorage(device, encodeFromF32(qw, c.norm), 'q_norm');
        kNormBuf = uploadStorage(device, encodeFromF32(kw, c.norm), 'k_norm');
      }
      const rope = { headDim: HS, ropeTheta: c.theta ?? 1e6, ropeScaling: null, ...c.rope };
      const layerRope = c.rope?.layerRope ?? true;
      const maxPos = Math.max(...c.seqs.map((s) => s.pos + s.count));

      const gkv = uploadKv(device, layout.kv);
      const qkvBuf = uploadStorage(device, qkv, 'qkv');
      const qBuf = uploadStorage(device, new Float32Array(T * NH * HS), 'q');
      const rowsBuf = uploadRows(device, rows);
      const table = createRopeTableBuffer(device, rope, maxPos);
      const prep = await checked(
        device,
        () => new QkvPrep(gpu, { NH, NKV, HS, qkNorm: c.norm ? { dtype: c.norm, eps } : null, rotaryDim: rope.rotaryDim }),
      );
      await runCalls(
        gpu,
        prep.encode({
          q: qBuf,
          k: gkv.k,
          v: gkv.v,
          qkv: qkvBuf,
          qNorm: qNormBuf,
          kNorm: kNormBuf,
          ropeTable: table,
          blockTable: gkv.blockTable,
          rows: rowsBuf,
          rope: layerRope,
          T,
          B: rows.length,
          maxBlocksPerSeq: layout.kv.maxBlocksPerSeq,
        }),
      );

      const wantQ = new Float32Array(T * NH * HS);
      const want = { ...layout.kv, k: layout.kv.k.slice(), v: layout.kv.v.slice() };
      qkvPrepForward(wantQ, want, qkv, norm, layerRope ? ropeFreqs(rope) : new Float32Array(0), rows, NH);
      // Sanity of the fixture itself: the batch really changed the cache.
      expect(want.k.some((x, i) => x !== layout.kv.k[i])).toBe(true);

      const tol = { atol: 3e-5, rtol: 3e-5 };
      expectClose(await readF32(device, qBuf, wantQ.length), wantQ, tol, 'q');
      expectClose(await readF32(device, gkv.k, want.k.length), want.k, tol, 'k cache');
      // v is a copy: exact.
      expectClose(await readF32(device, gkv.v, want.v.length), want.v, { atol: 0, rtol: 0 }, 'v cache');
      for (const b of [gkv.k, gkv.v, gkv.blockTable, qkvBuf, qBuf, rowsBuf, table, qNormBuf, kNormBuf]) b?.destroy();
    });
  }

  it('refuses a model with q/k norm when no norm weights are bound', async () => {
    const { device } = gpu;
    const prep = await checked(device, () => new QkvPrep(gpu, { NH: 2, NKV: 1, HS: 64, qkNorm: { dtype: 'bf16', eps: 1e-6 } }));
    const b = uploadStorage(device, new Float32Array(4 * 64 * 4), 'x');
    expect(() => prep.encode({ q: b, k: b, v: b, qkv: b, ropeTable: b, blockTable: b, rows: b, T: 1, B: 1, maxBlocksPerSeq: 1 })).toThrow(
      /q\/k norm/,
    );
    b.destroy();
  });
});
