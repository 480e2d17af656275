import { afterAll, describe, expect, it } from 'vitest';
import { DecodeAttention } from '../../src/engine/kernels/attention-decode';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { mlpSlices } from '../../src/engine/kernels/decode-mlp';
import { createDenseKernels } from '../../src/engine/kernels/registry';
import type { KernelCall } from '../../src/engine/gpu/kernel-call';
import { packBatchRows } from '../../src/engine/kernels/kv-layout';
import { expectClose } from '../../src/engine/reference/check';
import { Rng } from '../../src/engine/tensor/random';
import { destroyContexts, kernelContext, read, zeros } from './dense-helpers';
import { batchWithCache, testModel } from './decode-helpers';
import { decodeLayerArgs, decodeQkvArgs, lmHeadWeights } from '../../src/engine/model/weights/kernel-args';

afterAll(destroyContexts);

/**
 * The decode step of docs/engine.md as one command submission: embedding, then per layer qkv ->
 * paged decode attention (the attention family's kernel) -> o_proj -> mlp, then finalize and lm_head,
 * all recorded into one compute pass. Two sequences at different positions, prompts fed one token
 * per step; every step's logits must match the reference model's, and the profiler must count one
 * submission and 4 dispatches per layer.
 */
describe('one-submission decode steps (dense kernels + decode attention)', () => {
  it('llama (f16, GQA 3): logits of every step match the reference; 1 submission, 4 dispatches per layer', async () => {
    const ctx = await kernelContext();
    const { cfg, weights, ref } = await testModel(ctx, 'llama', 'f16', 101);
    const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, vocabSize: V, numLayers: L } = cfg;
    const prompts = [
      [7, 3, 99, 150, 4, 8, 15, 16, 23, 42, 108, 2, 71, 9, 9, 1, 5, 6, 200, 31],
      [11, 12, 13],
    ];
    const starts = [0, 4]; // the second sequence joins at step 4
    const B = 2;
    const maxContext = 24;
    const k = createDenseKernels(ctx);
    // 16-token splits so the longer sequence's context spans two (the merge in o_proj is exercised).
    const attention = new DecodeAttention(ctx, { NH, NKV, HS }, { minSplitLen: 16, targetWorkgroups: 64 });
    const { P } = mlpSlices(cfg.intermediateSize);
    const stream = new DecodeStream(ctx.device, B, C, P);
    const { cache, rows } = batchWithCache(ctx, new Rng(102), cfg, [maxContext - 1, maxContext - 1]);
    const q = zeros(ctx, B * NH * HS);
    const partials = zeros(ctx, attention.partialsFloats(B, maxContext));
    const logits = zeros(ctx, B * V);
    const tokens = zeros(ctx, B);
    const rowsBuf = zeros(ctx, B * 4);
    const sessions = prompts.map(() => ref.session());
    const steps = Math.max(...prompts.map((p, b) => starts[b] + p.length));
    for (let step = 0; step < steps; step++) {
      const active = [0, 1].filter((b) => step >= starts[b] && step - starts[b] < prompts[b].length);
      const Bs = active.length;
      const positions = active.map((b) => step - starts[b]);
      ctx.device.queue.writeBuffer(rowsBuf, 0, packBatchRows(active.map((b, i) => ({ ...rows[b], pos: positions[i] }))));
      ctx.device.queue.writeBuffer(tokens, 0, Uint32Array.from(active.map((b, i) => prompts[b][positions[i]])));
      const plan = attention.plan(Math.max(...positions) + 1, Bs);
      if (step === steps - 1) expect(plan.numSplits).toBe(2);
      const calls: KernelCall[] = [...k.embedding.encode({ out: stream.buffer, tokens, embedding: weights.embedding, T: Bs })];
      for (let l = 0; l < L; l++) {
        const pending = l === 0 ? 0 : P;
        calls.push(
          ...k.decodeQkv.encode({
            ...decodeQkvArgs(weights, l),
            stream,
            pending,
            rows: rowsBuf,
            blockTable: cache.blockTable,
            maxBlocksPerSeq: cache.maxBlocksPerSeq,
            k: cache.k[l],
            v: cache.v[l],
            q,
            B: Bs,
          }),
          ...attention.encode({
            partials,
            q,
            k: cache.k[l],
            v: cache.v[l],
            blockTable: cache.blockTable,
            rows: rowsBuf,
            B: Bs,
            maxBlocksPerSeq: cache.maxBlocksPerSeq,
            plan,
          }),
          ...k.decodeOProj.encode({
            ...decodeLayerArgs(weights, l),
            stream,
            pending,
            partials,
            numSplits: plan.numSplits,
            B: Bs,
          }),
          ...k.decodeMlp.encode({
            ...decodeLayerArgs(weights, l),
            stream,
            B: Bs,
          }),
        );
      }
      calls.push(
        ...k.decodeFinalize.encode({ stream, B: Bs, pending: P }),
        ...k.lmHead.encode({ head: lmHeadWeights(weights), stream, B: Bs, logits }),
      );
      ctx.profiler.reset();
      const encoder = ctx.device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      for (const c of calls) c.record(pass, ctx);
      pass.end();
      ctx.profiler.submit(ctx.device.queue, [encoder.finish()]);
      const counts = ctx.profiler.counts();
      expect(counts.submissions).toBe(1);
      expect(counts.dispatches).toBe(4 * L + 3);
      const got = await read(ctx, logits, Bs * V);
      for (const c of calls) c.dispose();
      active.forEach((b, i) => {
        const want = sessions[b].append([prompts[b][positions[i]]]);
        expectClose(got.subarray(i * V, (i + 1) * V), want, { atol: 2e-3, rtol: 2e-3 }, `step ${step} sequence ${b}`);
      });
    }
    cache.destroy();
    stream.destroy();
    weights.destroy();
  });
});
