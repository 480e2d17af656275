// Drives whole decode steps of a small model with the dense kernels, to check that they compose as
// docs/engine.md "Decode step" says: embedding -> per layer qkv, attention, o_proj, mlp -> finalize ->
// lm_head. Attention itself is another engineer's kernel: here its partials are computed in plain
// TypeScript from the K/V the qkv kernel wrote (read back each layer), split in 16-token splits.
// Prompts are fed one token per step, so every position goes through the decode kernels. Row b joins
// the batch at step starts[b] (continuous batching): the batch grows, positions differ between rows.
import { expect } from 'vitest';
import { readF32 } from '../../src/engine/gpu/buffers';
import type { KernelCall } from '../../src/engine/gpu/kernel-call';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { DecodeFinalize } from '../../src/engine/kernels/decode-finalize';
import { DecodeMlp, mlpSlices } from '../../src/engine/kernels/decode-mlp';
import { DecodeOProj } from '../../src/engine/kernels/decode-o-proj';
import { DecodeQkv } from '../../src/engine/kernels/decode-qkv';
import { DecodeStream } from '../../src/engine/kernels/decode-stream';
import { Embedding } from '../../src/engine/kernels/embedding';
import { LmHead } from '../../src/engine/kernels/lm-head';
import { decodeLayerArgs, decodeQkvArgs, lmHeadWeights } from '../../src/engine/model/weights/kernel-args';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import { packBatchRows } from '../../src/engine/kernels/kv-layout';
import { compareArrays } from '../../src/engine/reference/check';
import type { ReferenceSession } from '../../src/engine/reference/model';
import { Rng } from '../../src/engine/tensor/random';
import { kernelContext, read, upload, zeros } from './dense-helpers';
import { attentionPartials, batchWithCache, cacheOffset, testModel, type WeightDtypes } from './decode-helpers';

const SPLIT = 16;

export interface DecodeRun {
  /** Greedy tokens generated per row by the GPU and by the reference. */
  gpu: number[][];
  ref: number[][];
  /** Largest logit difference seen over all steps and rows. */
  maxAbs: number;
  /** Dense-kernel dispatches recorded per layer and per step (outside the layers). */
  perLayer: number;
  perStep: number;
}

export async function runDecode(
  arch: Architecture,
  dtype: WeightDtypes,
  prompts: number[][],
  starts: number[],
  generate: number,
  slice = 32,
  overrides: Partial<ModelConfig> = {},
): Promise<DecodeRun> {
  const ctx = await kernelContext();
  const rng = new Rng(81);
  const { cfg, weights, ref } = await testModel(ctx, arch, dtype, 82, overrides);
  const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, vocabSize: V, numLayers: L } = cfg;
  const B = prompts.length;
  const steps = Math.max(...prompts.map((p, b) => starts[b] + p.length)) + generate - 1;
  const { P } = mlpSlices(cfg.intermediateSize, slice);
  const stream = new DecodeStream(ctx.device, B, C, P);
  const { cache, tables, rows } = batchWithCache(
    ctx,
    rng,
    cfg,
    prompts.map((p) => p.length + generate),
  );
  // Block-table rows are shuffled relative to batch rows (batchWithCache), and the batch order below
  // changes as rows join and leave.
  const q = zeros(ctx, B * NH * HS);
  const logits = zeros(ctx, B * V);
  const tokensBuf = zeros(ctx, B);
  const kernels = {
    emb: new Embedding(ctx),
    qkv: new DecodeQkv(ctx),
    o: new DecodeOProj(ctx),
    mlp: new DecodeMlp(ctx),
    fin: new DecodeFinalize(ctx),
    head: new LmHead(ctx),
  };
  const sessions: ReferenceSession[] = prompts.map(() => ref.session());
  const out: DecodeRun = { gpu: prompts.map(() => []), ref: prompts.map(() => []), maxAbs: 0, perLayer: 0, perStep: 0 };
  const next = prompts.map((p) => p[0]);
  for (let step = 0; step < steps; step++) {
    // Every active row decodes one token per step: its next prompt token, else its last generated
    // token, until it has generated `generate` tokens.
    const active = rows.map((_, b) => b).filter((b) => step >= starts[b] && out.gpu[b].length < generate);
    const Bs = active.length;
    const positions = active.map((b) => step - starts[b]);
    const rowsBuf = upload(ctx, packBatchRows(active.map((b, i) => ({ ...rows[b], pos: positions[i] }))));
    ctx.device.queue.writeBuffer(tokensBuf, 0, Uint32Array.from(active.map((b) => next[b])));
    const before = ctx.profiler.dispatches;
    await runCalls(ctx, kernels.emb.encode({ out: stream.buffer, tokens: tokensBuf, embedding: weights.embedding, T: Bs }));
    const stepDispatches = ctx.profiler.dispatches - before;
    for (let l = 0; l < L; l++) {
      const pending = l === 0 ? 0 : P;
      const layerStart = ctx.profiler.dispatches;
      await runCalls(ctx, [
        ...kernels.qkv.encode({
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
      ]);
      const qv = await read(ctx, q, Bs * NH * HS);
      const kc = await readF32(ctx.device, cache.k[l], cache.k[l].size / 4);
      const vc = await readF32(ctx.device, cache.v[l], cache.v[l].size / 4);
      const S = Math.ceil((Math.max(...positions) + 1) / SPLIT);
      const partials = new Float32Array(Bs * NH * S * (HS + 2));
      for (let i = 0; i < Bs; i++) {
        const b = active[i];
        const n = positions[i] + 1;
        const k = new Float32Array(n * NKV * HS);
        const v = new Float32Array(n * NKV * HS);
        for (let p = 0; p < n; p++) {
          for (let h = 0; h < NKV; h++) {
            const o = cacheOffset(tables[b], p, h, NKV, HS);
            k.set(kc.subarray(o, o + HS), (p * NKV + h) * HS);
            v.set(vc.subarray(o, o + HS), (p * NKV + h) * HS);
          }
        }
        partials.set(attentionPartials(qv.subarray(i * NH * HS, (i + 1) * NH * HS), k, v, n, NH, NKV, HS, S, SPLIT), i * NH * S * (HS + 2));
      }
      const calls: KernelCall[] = [
        ...kernels.o.encode({
          ...decodeLayerArgs(weights, l),
          stream,
          pending,
          partials: upload(ctx, partials),
          numSplits: S,
          B: Bs,
        }),
        ...kernels.mlp.encode({
          ...decodeLayerArgs(weights, l),
          stream,
          B: Bs,
          slice,
        }),
      ];
      await runCalls(ctx, calls);
      out.perLayer = ctx.profiler.dispatches - layerStart;
    }
    const tailStart = ctx.profiler.dispatches;
    await runCalls(ctx, [
      ...kernels.fin.encode({ stream, B: Bs, pending: P }),
      ...kernels.head.encode({ head: lmHeadWeights(weights), stream, B: Bs, logits }),
    ]);
    out.perStep = stepDispatches + ctx.profiler.dispatches - tailStart;
    const got = await read(ctx, logits, Bs * V);
    for (let i = 0; i < Bs; i++) {
      const b = active[i];
      const want = sessions[b].append([next[b]]);
      const row = got.subarray(i * V, (i + 1) * V);
      const c = compareArrays(row, want, { atol: 2e-3, rtol: 2e-3 }, `step ${step} row ${b} logits`);
      out.maxAbs = Math.max(out.maxAbs, c.maxAbs);
      expect(c.ok, c.report).toBe(true);
      if (positions[i] + 1 < prompts[b].length) {
        next[b] = prompts[b][positions[i] + 1];
      } else {
        const argmax = (a: Float32Array) => a.reduce((best, v, i) => (v > a[best] ? i : best), 0);
        out.gpu[b].push(argmax(row));
        out.ref[b].push(argmax(want));
        next[b] = argmax(want); // both continue from the reference's choice
      }
    }
  }
  cache.destroy();
  stream.destroy();
  weights.destroy();
  return out;
}
