/**
 * QkvPrepBackward on the GPU (RoPE backward and Qwen3's per-head q/k norm backward, in place on the
 * QKV projection's gradient) against reference/qkv-prep-backward.ts, which composes the op
 * references (ropeBackward, rmsnormBackward). Several rows at different positions (including long
 * ones), GQA, head dims 16 to 128, q/k norm weights in each dtype; v columns must come back unchanged.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { QkvPrepBackward } from '../../src/engine/kernels/qkv-prep-backward';
import { encodeFromF32, roundToDtype } from '../../src/engine/tensor/dtype';
import { NO_ADAPTER } from '../../src/engine/kernels/kv-layout';
import { createRopeTableBuffer, ropeFreqs } from '../../src/engine/model/config/rope';
import type { QkNorm } from '../../src/engine/reference/attention-paged';
import { expectClose } from '../../src/engine/reference/check';
import { qkvPrepBackward } from '../../src/engine/reference/qkv-prep-backward';
import {
  checked,
  openGpu,
  readF32,
  Rng,
  ROPE_VARIANT_CASES,
  runCalls,
  uploadRows,
  uploadStorage,
  type Gpu,
  type RopeVariantCase,
} from './attention-fixtures';

let gpu: Gpu;
beforeAll(async () => {
  gpu = await openGpu();
});
afterAll(() => gpu?.device.destroy());

/** Llama-style RoPE when `rope` is absent. */
type Case = Omit<RopeVariantCase, 'rope'> & Partial<Pick<RopeVariantCase, 'rope'>>;

const CASES: Case[] = [
  ...ROPE_VARIANT_CASES,
  { name: 'MHA HS 64, no norm, one row from position 0', NH: 4, NKV: 4, HS: 64, norm: null, rows: [{ pos: 0, count: 17 }] },
  {
    name: 'GQA 3, HS 128, q/k norm bf16, rows at positions 5, 16 and 0',
    NH: 6,
    NKV: 2,
    HS: 128,
    norm: 'bf16',
    rows: [
      { pos: 5, count: 11 },
      { pos: 16, count: 1 },
      { pos: 0, count: 9 },
    ],
  },
  {
    name: 'GQA 7, HS 48, q/k norm f16, a long position',
    NH: 7,
    NKV: 1,
    HS: 48,
    norm: 'f16',
    rows: [
      { pos: 300, count: 15 },
      { pos: 2, count: 4 },
    ],
  },
  { name: 'GQA 3, HS 24 (the Qwen3 test model), q/k norm f32', NH: 6, NKV: 2, HS: 24, norm: 'f32', rows: [{ pos: 0, count: 13 }] },
  {
    name: 'GQA 3, HS 16, no norm',
    NH: 6,
    NKV: 2,
    HS: 16,
    norm: null,
    rows: [
      { pos: 20, count: 5 },
      { pos: 0, count: 3 },
    ],
  },
];

describe('qkv-prep backward', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const { device } = gpu;
      const { NH, NKV, HS } = c;
      const rng = new Rng(4321 + HS + NH);
      const rows = c.rows.map((r, i) => ({ seq: i, pos: r.pos, adapter: NO_ADAPTER, count: r.count }));
      const T = rows.reduce((a, r) => a + r.count, 0);
      const W = (NH + 2 * NKV) * HS;
      const qkv = rng.normals(T * W, 2);
      const grad = rng.normals(T * W);
      const eps = 1e-6;
      const cfg = { headDim: HS, ropeTheta: 1000000, ropeScaling: null, ...c.rope };
      const layerRope = c.rope?.layerRope ?? true;
      let norm: QkNorm | null = null;
      const io: Record<string, GPUBuffer> = {};
      if (c.norm) {
        const q = rng.uniforms(HS, 0.5, 1.5);
        const k = rng.uniforms(HS, 0.5, 1.5);
        norm = { q: roundToDtype(q, c.norm), k: roundToDtype(k, c.norm), eps };
        io.qNorm = uploadStorage(device, encodeFromF32(q, c.norm), 'qNorm');
        io.kNorm = uploadStorage(device, encodeFromF32(k, c.norm), 'kNorm');
      }
      // Reference: split the incoming gradient into dq, dk (after RoPE) and dv.
      const dq = new Float32Array(T * NH * HS);
      const dk = new Float32Array(T * NKV * HS);
      const dv = new Float32Array(T * NKV * HS);
      for (let t = 0; t < T; t++) {
        dq.set(grad.subarray(t * W, t * W + NH * HS), t * NH * HS);
        dk.set(grad.subarray(t * W + NH * HS, t * W + (NH + NKV) * HS), t * NKV * HS);
        dv.set(grad.subarray(t * W + (NH + NKV) * HS, (t + 1) * W), t * NKV * HS);
      }
      const want = new Float32Array(T * W);
      qkvPrepBackward(want, dq, dk, dv, qkv, norm, layerRope ? ropeFreqs(cfg) : new Float32Array(0), rows, NH, NKV, HS);

      const maxPos = Math.max(...rows.map((r) => r.pos + r.count));
      const dqkv = uploadStorage(device, grad, 'dqkv');
      const kernel = await checked(
        device,
        () => new QkvPrepBackward(gpu, { NH, NKV, HS, qkNorm: c.norm ? { dtype: c.norm, eps } : null, rotaryDim: cfg.rotaryDim }),
      );
      await runCalls(gpu, [
        ...kernel.encode({
          dqkv,
          qkv: uploadStorage(device, qkv, 'qkv'),
          qNorm: io.qNorm,
          kNorm: io.kNorm,
          ropeTable: createRopeTableBuffer(device, cfg, maxPos),
          rows: uploadRows(device, rows),
          rope: layerRope,
          T,
          B: rows.length,
        }),
      ]);
      expectClose(await readF32(device, dqkv, T * W), want, { atol: 2e-5, rtol: 2e-4 }, 'dqkv');
    });
  }
});
