import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { decodeLayerArgs, decodeShapeOf } from '../../src/engine/model/weights/kernel-args';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { DecodeOProj } from '../../src/engine/kernels/decode-o-proj';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { destroyContexts, kernelContext, read, TOL, upload } from './dense-helpers';
import { filledStream, randomAttentionRows, testModel } from './decode-helpers';

afterAll(destroyContexts);

// One dtype per architecture keeps every dtype covered without compiling each kernel 9 times.
describe('fused decode o_proj', () => {
  const large = { hiddenSize: 768, numHeads: 8, numKvHeads: 2, headDim: 64 };
  const cases: Array<[Architecture, DType, Partial<ModelConfig>, number[]]> = [
    ['llama', 'bf16', {}, [1, 70, 33]],
    ['qwen2', 'f16', { outputBias: true }, [40]],
    ['qwen3', 'f32', {}, [1, 70, 33, 2, 16, 17, 64, 5]],
    ['llama', 'f16', large, [1, 300, 17]], // a long context (10 splits); activations staged in 2 chunks
  ];
  for (const [arch, dtype, overrides, lengths] of cases) {
    it(`${arch} (${dtype}, B ${lengths.length}${overrides.hiddenSize ? `, C ${overrides.hiddenSize}` : ''}): merges split attention partials, projects, adds pending partials into the residual`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(41);
      const { cfg, weights, ref } = await testModel(ctx, arch, dtype, 42, overrides);
      const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS } = cfg;
      const B = lengths.length;
      const splitLen = 32;
      const S = Math.ceil(Math.max(...lengths) / splitLen);
      const { stream, h } = filledStream(ctx, rng, B, C, 3, 2);
      const { partials, att } = randomAttentionRows(rng, lengths, NH, NKV, HS, S, splitLen);
      const l = 0;
      await runCalls(ctx, [
        ...new DecodeOProj(ctx).encode({
          ...decodeLayerArgs(weights, l),
          stream,
          pending: 2,
          partials: upload(ctx, partials),
          numSplits: S,
          B,
        }),
      ]);
      const want = new Float32Array(B * C);
      linearForward(want, att, ref.layers[l].o, ref.layers[l].oBias, B, NH * HS, C);
      for (let i = 0; i < B * C; i++) want[i] += h[i];
      expectClose(await read(ctx, stream.buffer, B * C), want, TOL, 'residual');
      weights.destroy();
    });
  }

  it('says when the splits are too many to merge in the prologue', async () => {
    const ctx = await kernelContext();
    const { weights } = await testModel(ctx, 'llama', 'f32', 43);
    const o = new DecodeOProj(ctx);
    expect(o.fits(decodeShapeOf(weights.config), 4, 8)).toBe(true);
    expect(o.fits(decodeShapeOf(weights.config), 1, 1000)).toBe(false);
    weights.destroy();
  });
});
