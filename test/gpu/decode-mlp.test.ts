import { afterAll, describe, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { decodeLayerArgs } from '../../src/engine/model/weights/kernel-args';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { DecodeFinalize } from '../../src/engine/kernels/decode-finalize';
import { DecodeMlp, mlpSlices } from '../../src/engine/kernels/decode-mlp';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { swigluForward } from '../../src/engine/reference/swiglu';
import { destroyContexts, kernelContext, read, TOL } from './dense-helpers';
import { filledStream, testModel } from './decode-helpers';

afterAll(destroyContexts);

// One dtype per architecture keeps every dtype covered without compiling each kernel 9 times.
describe('fused decode mlp', () => {
  // Slices of 32 leave a last slice of 8 (F = 136); slices of 128 one of 8 too, in fewer workgroups.
  // The large shape (C = 768, F = 300) walks the 64 gate/up rows of a slice in two groups,
  // stages activations in two chunks, and ends on a slice of 12.
  const cases: Array<[Architecture, DType, number, Partial<ModelConfig>, number]> = [
    ['llama', 'bf16', 32, { mlpBias: true }, 3],
    ['qwen2', 'f16', 128, {}, 1],
    ['qwen3', 'f32', 32, {}, 8],
    ['qwen2', 'bf16', 32, { hiddenSize: 768, numHeads: 8, numKvHeads: 2, headDim: 64, intermediateSize: 300 }, 3],
  ];
  for (const [arch, dtype, slice, overrides, B] of cases) {
    {
      it(`${arch} (${dtype}, B ${B}${overrides.hiddenSize ? `, C ${overrides.hiddenSize}` : ''}), slices of ${slice}: partial sums add up to the MLP, each its own slice`, async () => {
        const ctx = await kernelContext();
        const rng = new Rng(51);
        const { cfg, weights, ref } = await testModel(ctx, arch, dtype, 52, overrides);
        const { hiddenSize: C, intermediateSize: F } = cfg;
        const { P, FS } = mlpSlices(F, slice);
        const { stream, init } = filledStream(ctx, rng, B, C, P, 0);
        const l = 1;
        await runCalls(ctx, [
          ...new DecodeMlp(ctx).encode({
            ...decodeLayerArgs(weights, l),
            stream,
            B,
            slice,
          }),
        ]);
        const got = await read(ctx, stream.buffer, (1 + P) * B * C);
        const w = ref.layers[l];
        const x = new Float32Array(B * C);
        rmsnormForward(x, null, init.subarray(0, B * C), w.postNorm, B, C, cfg.rmsNormEps);
        const g = new Float32Array(B * F);
        const u = new Float32Array(B * F);
        linearForward(g, x, w.gate, w.gateBias, B, C, F);
        linearForward(u, x, w.up, w.upBias, B, C, F);
        const act = new Float32Array(B * F);
        swigluForward(act, g, u, B, F);
        // Partial p = down[:, slice p] act[slice p] (+ bias in slice 0).
        for (let p = 0; p < P; p++) {
          const want = new Float32Array(B * C);
          for (let b = 0; b < B; b++) {
            for (let c = 0; c < C; c++) {
              let s = p === 0 && w.downBias ? w.downBias[c] : 0;
              for (let f = p * FS; f < Math.min(F, (p + 1) * FS); f++) s += w.down[c * F + f] * act[b * F + f];
              want[b * C + c] = s;
            }
          }
          expectClose(got.subarray((1 + p) * B * C, (2 + p) * B * C), want, TOL, `partial ${p}`);
        }
        const total = new Float32Array(B * C);
        for (let p = 0; p < P; p++) for (let i = 0; i < B * C; i++) total[i] += got[(1 + p) * B * C + i];
        const mlp = new Float32Array(B * C);
        linearForward(mlp, act, w.down, w.downBias, B, F, C);
        expectClose(total, mlp, TOL, 'sum of partials');
        // The residual is only read.
        expectClose(got.subarray(0, B * C), init.subarray(0, B * C), { atol: 0, rtol: 0 }, 'residual');
        weights.destroy();
      });
    }
  }
});

describe('decode finalize', () => {
  it('adds the pending partials into the residual in order', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(61);
    const B = 5,
      C = 40;
    const { stream, h } = filledStream(ctx, rng, B, C, 4, 4);
    await runCalls(ctx, [...new DecodeFinalize(ctx).encode({ stream, B, pending: 4 })]);
    expectClose(await read(ctx, stream.buffer, B * C), h, { atol: 1e-6, rtol: 1e-6 }, 'residual');
  });
});
