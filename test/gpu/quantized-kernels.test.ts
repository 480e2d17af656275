/**
 * The weight-reading kernels on GGML block types against dequantize-then-f32 math (reference/
 * dequant.ts, checked against llama.cpp): for every block type, random blocks (every quant bit random)
 * in a matrix split in row chunks, through the decode GEMV, the embedding gather, lm_head (final norm
 * folded into the projection over a tied embedding, as decode runs it) and the GEMM (Y = X W^T, tiled and naive, so both load8 and
 * load1; for a few types also the training backward dX = dY W through the frozen weight). Rows have an odd number of blocks where the type's blocks
 * are not whole u32 words (Q8_0, Q4_0, Q5_0, Q3_K, Q6_K), so the zero padding block of
 * gpu/packed-tensor.ts is exercised too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { rowLayout } from '../../src/engine/gpu/packed-tensor';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { Embedding } from '../../src/engine/kernels/embedding';
import { Gemm } from '../../src/engine/kernels/gemm';
import { Gemv } from '../../src/engine/kernels/gemv';
import { LmHead } from '../../src/engine/kernels/lm-head';
import { lmHeadWeights } from '../../src/engine/model/weights/kernel-args';
import type { BlockDType } from '../../src/engine/tensor/dtype';
import { blockLayout } from '../../src/engine/tensor/dtype';
import { EMBED_NAME, FINAL_NORM_NAME } from '../../src/engine/model/weights/parameter-plan';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { expectClose } from '../../src/engine/reference/check';
import { dequantizeTensor } from '../../src/engine/model/quant/dequant';
import { embeddingForward } from '../../src/engine/reference/embedding';
import { linearBackward, linearForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { randomBlockTensor } from '../../src/engine/reference/random-quantized';
import { testConfig } from '../../src/engine/reference/random-model';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { tensorFromF32 } from '../../src/engine/tensor/tensor-data';
import { destroyContexts, kernelContext, read, TOL, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

const TYPES: BlockDType[] = ['q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k'];

/** Dequantized weights differ from the reference only by f32 rounding (an FMA where it rounds twice). */
const EXACT = { atol: 1e-6, rtol: 1e-6 };

const DX_TYPES: BlockDType[] = ['q8_0', 'q4_k', 'q6_k'];

describe('kernels reading GGML block weights against the dequantized reference', () => {
  for (const dtype of TYPES) {
    it(`${dtype}: GEMV, embedding, lm_head, GEMM tiled and naive${DX_TYPES.includes(dtype) ? ' and dX' : ''} over a row-chunked matrix`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(TYPES.indexOf(dtype) + 1);
      const { blockSize } = blockLayout(dtype);
      // One or three blocks per row: odd, so 2-byte-aligned types get a padding block.
      const C = blockSize === 32 ? 96 : 256;
      const V = 13;
      const cfg = testConfig('qwen2', { hiddenSize: C, vocabSize: V, numLayers: 0, tieWordEmbeddings: true });
      const emb = randomBlockTensor(EMBED_NAME, dtype, V, C, 1, rng);
      const norm = rng.uniforms(C, 0.5, 1.5);
      const weights = await WeightSet.upload(ctx.device, cfg, [emb, tensorFromF32(FINAL_NORM_NAME, [C], norm, 'f32')], {
        // 5 rows per chunk (padding block included) -> chunks of 5, 5 and 3 rows
        chunkBytes: 5 * rowLayout(EMBED_NAME, dtype, C).rowBytes,
        ropePositions: 1,
      });
      const W = weights.embedding;
      expect(W.chunks.map((c) => c.rows)).toEqual([5, 5, 3]);
      const w = dequantizeTensor(emb);

      // Decode GEMV, B = 3
      const B = 3;
      const x = rng.normals(B * C);
      const y = zeros(ctx, B * V);
      await runCalls(ctx, new Gemv(ctx).encode({ out: y, x: upload(ctx, x), weight: W, B }));
      const wantY = new Float32Array(B * V);
      linearForward(wantY, x, w, null, B, C, V);
      expectClose(await read(ctx, y, B * V), wantY, TOL, 'gemv');

      // Embedding gather: rows from every chunk, repeats included
      const tokens = [12, 0, 7, 4, 5, 12, 10];
      const e = zeros(ctx, tokens.length * C);
      await runCalls(
        ctx,
        new Embedding(ctx).encode({ out: e, tokens: upload(ctx, Uint32Array.from(tokens)), embedding: W, T: tokens.length }),
      );
      const wantE = new Float32Array(tokens.length * C);
      embeddingForward(wantE, tokens, w, tokens.length, C, V);
      expectClose(await read(ctx, e, tokens.length * C), wantE, EXACT, 'embedding');

      // lm_head (tied) as a decode step runs it: the final RMSNorm folded into the GEMV over the stream
      const R = 2;
      const stream = new DecodeStream(ctx.device, R, C, 1);
      const hidden = rng.normals(R * C, 2);
      ctx.device.queue.writeBuffer(stream.buffer, 0, hidden);
      const logits = zeros(ctx, R * V);
      await runCalls(ctx, new LmHead(ctx).encode({ head: lmHeadWeights(weights), stream, B: R, logits }));
      const normed = new Float32Array(R * C);
      rmsnormForward(normed, null, hidden, norm, R, C, cfg.rmsNormEps);
      const wantLogits = new Float32Array(R * V);
      linearForward(wantLogits, normed, w, null, R, C, V);
      expectClose(await read(ctx, logits, R * V), wantLogits, TOL, 'lm_head');
      stream.destroy();

      // GEMM, Y = X W^T over N chunks (M = 5): the tiled kernel (8 weights per load) and the naive one
      // (one weight per load, the accessors' load1)
      const M = 5;
      const xm = rng.normals(M * C);
      const wantYm = new Float32Array(M * V);
      linearForward(wantYm, xm, w, null, M, C, V);
      for (const naive of [false, true]) {
        const ym = zeros(ctx, M * V);
        const b = { weight: W, layout: 'rows-are-n' } as const;
        await runCalls(ctx, new Gemm(ctx).encode({ out: ym, a: upload(ctx, xm), b, M, N: V, K: C, naive }));
        expectClose(await read(ctx, ym, M * V), wantYm, TOL, naive ? 'gemm-naive' : 'gemm');
      }

      // The training backward dX = dY W through the frozen weight, over K chunks, accumulating (a few
      // types: it reads the same load8 as the forward, along the other axis; test/gpu/train-quantized
      // runs whole QLoRA steps)
      if (!DX_TYPES.includes(dtype)) return weights.destroy();
      const dy = rng.normals(M * V);
      const dx0 = rng.normals(M * C);
      const dx = upload(ctx, dx0);
      await runCalls(
        ctx,
        new Gemm(ctx).encode({ out: dx, a: upload(ctx, dy), b: { weight: W, layout: 'rows-are-k' }, M, N: C, K: V, accumulate: true }),
      );
      const wantDx = Float32Array.from(dx0);
      linearBackward(wantDx, null, null, dy, new Float32Array(M * C), w, M, C, V);
      expectClose(await read(ctx, dx, M * C), wantDx, TOL, 'gemm dX');
      weights.destroy();
    });
  }
});
