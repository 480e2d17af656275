import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { LmHead } from '../../src/engine/kernels/lm-head';
import { lmHeadWeights } from '../../src/engine/model/weights/kernel-args';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { ReferenceModel } from '../../src/engine/reference/model';
import { Rng } from '../../src/engine/tensor/random';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { destroyContexts, kernelContext, read, TOL, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

async function chunkedModel(seed: number) {
  const ctx = await kernelContext();
  const cfg = testConfig('llama', { vocabSize: 211 });
  const tensors = randomModelTensors(cfg, 'bf16', seed);
  // 96 bf16 per row = 192 bytes: 40 rows per chunk -> 6 chunks, the last of 11 rows
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, { chunkBytes: 40 * 192, ropePositions: 4 });
  expect(weights.lmHead.chunks).toHaveLength(6);
  return { ctx, cfg, weights, ref: new ReferenceModel(cfg, tensors) };
}

function expected(ref: ReferenceModel, hidden: Float32Array, R: number): Float32Array {
  const { hiddenSize: C, vocabSize: V, rmsNormEps } = ref.config;
  const x = new Float32Array(R * C);
  rmsnormForward(x, null, hidden, ref.finalNorm, R, C, rmsNormEps);
  const logits = new Float32Array(R * V);
  linearForward(logits, x, ref.lmHead, null, R, C, V);
  return logits;
}

describe('lm_head over a row-chunked vocabulary', () => {
  it('decode: final norm folded into the GEMV over the stream residual', async () => {
    const { ctx, cfg, weights, ref } = await chunkedModel(71);
    const B = 3;
    const stream = new DecodeStream(ctx.device, 4, cfg.hiddenSize, 2);
    const h = new Rng(72).normals(B * cfg.hiddenSize, 2);
    ctx.device.queue.writeBuffer(stream.buffer, 0, h);
    const logits = zeros(ctx, B * cfg.vocabSize);
    await runCalls(ctx, new LmHead(ctx).encode({ head: lmHeadWeights(weights), stream, B, logits }));
    expectClose(await read(ctx, logits, B * cfg.vocabSize), expected(ref, h, B), TOL, 'logits');
    weights.destroy();
  });

  for (const [T, picked] of [
    [10, [9, 3]],
    [70, Array.from({ length: 70 }, (_, i) => 69 - i)],
  ] as const) {
    it(`prefill: ${picked.length} gathered rows of ${T} (${picked.length > 64 ? 'GEMM' : 'GEMV'})`, async () => {
      const { ctx, cfg, weights, ref } = await chunkedModel(73);
      const C = cfg.hiddenSize;
      const V = cfg.vocabSize;
      const hidden = new Rng(T).normals(T * C);
      const R = picked.length;
      const logits = zeros(ctx, R * V);
      await runCalls(
        ctx,
        new LmHead(ctx).encode({
          head: lmHeadWeights(weights),
          logits,
          hidden: upload(ctx, hidden),
          R,
          rows: upload(ctx, Uint32Array.from(picked)),
          scratch: zeros(ctx, R * C),
        }),
      );
      const rows = new Float32Array(R * C);
      picked.forEach((r, i) => rows.set(hidden.subarray(r * C, (r + 1) * C), i * C));
      expectClose(await read(ctx, logits, R * V), expected(ref, rows, R), TOL, 'logits');
      weights.destroy();
    });
  }
});
