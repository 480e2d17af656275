/**
 * The training forward of one micro-batch, as KernelCalls to record into the step's pass: the
 * prefill-shaped GEMM path of docs/engine.md ("Dense kernels") over the micro-batch's sequences,
 * each from position 0, with the LoRA terms of every adapted module, writing what the backward
 * reads into the activation buffers (memory-plan.ts).
 *
 * Per layer l (h[l] is the residual entering it):
 *   x = rmsnorm(h[l]) (rstd1)          qkv = x Wqkv^T (+ b) + s (x A^T) B^T per q/k/v module
 *   q, k, v = qkv-prep(qkv)            att, lse = attention(q, k, v)
 *   hMid = att Wo^T (+ b) + LoRA + h[l]
 *   x = rmsnorm(hMid) (rstd2)          gu = x Wgu^T (+ b) + LoRA;  act = silu(gate) * up
 *   h[l+1] = act Wd^T (+ b) + LoRA + hMid
 * Gemma 3 (sandwich norms, model/config/model-config.ts): oOut = att Wo^T + LoRA, hMid = h[l] + rmsnorm(oOut) (rstdO);
 * downOut = act Wd^T + LoRA, h[l+1] = hMid + rmsnorm(downOut) (rstdD); act = gelu_tanh(gate) * up;
 * h[0] is the embedding times its normaliser.
 * LoRA: one GEMM u = x [A_1; ..; A_n]^T per group (the group's A matrices are stacked, lora-plan.ts),
 * then one accumulating GEMM per module y[:, col0 .. col0 + out] += s u_m B_m^T into the module's
 * columns of the fused output, before q/k-norm and RoPE as in PEFT.
 *
 * The backward's recomputation ('recompute' mode) calls `encodeLayerForward` with
 * `writeOutput: false`: everything but the residual update of h[l+1] (which the backward already
 * holds the gradient of), bit-identical to the first pass.
 * Not here: the head (graph-head.ts), the backward (graph-backward.ts).
 */
import { qkvPrepWeights } from '../model/weights/kernel-args';
import { layerWindow } from '../model/config/attention-window';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { embeddingScaleOf } from '../model/weights/vector-values';
import { type WeightSet } from '../model/weights/weight-set';
import type { TrainingBuffers } from './activations';
import type { TrainKernels } from '../kernels/registry';
import type { LoraGroupPlan, LoraPlan } from './lora-plan';
import type { LoraState } from './lora-state';

/** What every graph function reads: kernels, weights, the adapter and the activation buffers. */
export interface TrainGraph {
  k: TrainKernels;
  weights: WeightSet;
  lora: LoraPlan;
  state: LoraState;
  buf: TrainingBuffers;
}

/** The shape of one micro-batch. */
export interface MicroBatchDims {
  /** Tokens (rows). */
  T: number;
  /** Sequences. */
  B: number;
  /** Longest sequence. */
  maxCount: number;
}

/** What both directions of layer l read: its weights and adapter groups, the kernels and buffers, and its sizes. */
export function layerOf(g: TrainGraph, l: number) {
  const cfg = g.weights.config;
  const NQ = cfg.numHeads * cfg.headDim;
  return {
    cfg,
    w: g.weights.layers[l],
    L: g.lora.layers[l],
    k: g.k,
    buf: g.buf,
    C: cfg.hiddenSize,
    F: cfg.intermediateSize,
    NQ,
    QKV: NQ + 2 * cfg.numKvHeads * cfg.headDim,
    eps: cfg.rmsNormEps,
    vectors: g.weights.vectors,
  };
}

/** The residual leaving layer l: h[l + 1], or hFinal after the last layer. */
export function residualOut(g: TrainGraph, l: number): GPUBuffer {
  return l + 1 < g.buf.residual.length ? g.buf.residual[l + 1] : g.buf.get('hFinal');
}

/** u [T, n r] = x [A_1; ..; A_n]^T for the group's stacked A. */
export function loraShrink(g: TrainGraph, group: LoraGroupPlan, x: BufferRef, u: BufferRef, T: number): KernelCall[] {
  return g.k.gemm.encode({
    out: u,
    a: x,
    M: T,
    N: group.rows,
    K: group.in,
    b: { f32: g.state.params, offset: group.aOffset, ld: group.in, layout: 'rows-are-n' },
  });
}

/** y[:, col0_m ..] += s u_m B_m^T for each module of the group (y row stride: the fused width). */
export function loraExpand(g: TrainGraph, group: LoraGroupPlan, u: BufferRef, y: BufferRef, T: number): KernelCall[] {
  return group.modules.flatMap((m) =>
    g.k.gemm.encode({
      out: y,
      cOffset: m.col0,
      ldc: group.outWidth,
      a: u,
      aOffset: m.aRow,
      lda: group.rows,
      M: T,
      N: m.out,
      K: g.lora.rank,
      b: { f32: g.state.params, offset: m.bOffset, ld: g.lora.rank, layout: 'rows-are-n' },
      alpha: g.lora.scale,
      accumulate: true,
    }),
  );
}

/** h[0] = the embeddings of the micro-batch's tokens. */
export function encodeEmbedding(g: TrainGraph, d: MicroBatchDims): KernelCall[] {
  const embedding = g.weights.embedding;
  const scale = embeddingScaleOf(g.weights.config);
  return g.k.embedding.encode({ out: g.buf.residual[0], tokens: g.buf.get('tokens'), embedding, T: d.T, scale });
}

export function encodeLayerForward(g: TrainGraph, l: number, d: MicroBatchDims, opts: { writeOutput: boolean }): KernelCall[] {
  const { cfg, w, L, k, buf, C, F, NQ, QKV, eps, vectors } = layerOf(g, l);
  const { T } = d;
  const x = buf.get('x');
  const act = buf.get('act');
  const a = (name: Parameters<TrainingBuffers['layer']>[1]) => buf.layer(l, name);
  const h = buf.residual[l];
  const calls: KernelCall[] = [];

  // Attention block.
  calls.push(...k.rmsnorm.encode({ out: x, inp: h, N: T, C, vectors, weightOffset: w.inputNorm, eps, rstd: a('rstd1') }));
  calls.push(
    ...k.gemm.encode({ out: a('qkv'), a: x, b: { weight: w.qkv, layout: 'rows-are-n' }, M: T, N: QKV, K: C, vectors, bias: w.qkvBias }),
  );
  if (L.qkv) {
    calls.push(...loraShrink(g, L.qkv, x, a('u.qkv'), T));
    calls.push(...loraExpand(g, L.qkv, a('u.qkv'), a('qkv'), T));
  }
  const attnIo = { blockTable: buf.get('blockTable'), rows: buf.get('rows') };
  const attnDims = { T, B: d.B, maxBlocksPerSeq: buf.plan.maxBlocksPerSeq };
  calls.push(
    ...k.qkvPrep.encode({ q: a('q'), k: a('k'), v: a('v'), qkv: a('qkv'), ...qkvPrepWeights(g.weights, l), ...attnIo, ...attnDims }),
  );
  calls.push(
    ...k.attention.encode({
      out: a('att'),
      lse: a('lse'),
      q: a('q'),
      k: a('k'),
      v: a('v'),
      ...attnIo,
      ...attnDims,
      maxCount: d.maxCount,
      window: layerWindow(cfg, l),
    }),
  );
  const oOut = w.attnOutNorm === null ? a('hMid') : a('oOut');
  calls.push(
    ...k.gemm.encode({ out: oOut, a: a('att'), b: { weight: w.o, layout: 'rows-are-n' }, M: T, N: C, K: NQ, vectors, bias: w.oBias }),
  );
  if (L.o) {
    calls.push(...loraShrink(g, L.o, a('att'), a('u.o'), T));
    calls.push(...loraExpand(g, L.o, a('u.o'), oOut, T));
  }
  if (w.attnOutNorm !== null) {
    calls.push(...k.rmsnorm.encode({ out: a('hMid'), inp: oOut, N: T, C, vectors, weightOffset: w.attnOutNorm, eps, rstd: a('rstdO') }));
  }
  calls.push(...k.add.encode({ out: a('hMid'), inp: h, n: T * C }));

  // MLP block.
  calls.push(...k.rmsnorm.encode({ out: x, inp: a('hMid'), N: T, C, vectors, weightOffset: w.postNorm, eps, rstd: a('rstd2') }));
  calls.push(
    ...k.gemm.encode({
      out: a('gu'),
      a: x,
      b: { weight: w.gateUp, layout: 'rows-are-n' },
      M: T,
      N: 2 * F,
      K: C,
      vectors,
      bias: w.gateUpBias,
    }),
  );
  if (L.gateUp) {
    calls.push(...loraShrink(g, L.gateUp, x, a('u.gateUp'), T));
    calls.push(...loraExpand(g, L.gateUp, a('u.gateUp'), a('gu'), T));
  }
  calls.push(...k.swiglu.encode({ out: act, gateUp: a('gu'), T, F, act: cfg.hiddenAct }));
  if (L.down) calls.push(...loraShrink(g, L.down, act, a('u.down'), T));
  if (w.mlpOutNorm !== null) {
    // Gemma: the backward reads downOut and rstdD, so they are computed in both passes; the
    // recomputation normalises into the scratch x (recomputed next anyway) instead of h[l+1].
    const downOut = a('downOut');
    calls.push(
      ...k.gemm.encode({ out: downOut, a: act, b: { weight: w.down, layout: 'rows-are-n' }, M: T, N: C, K: F, vectors, bias: w.downBias }),
    );
    if (L.down) calls.push(...loraExpand(g, L.down, a('u.down'), downOut, T));
    const out = opts.writeOutput ? residualOut(g, l) : x;
    calls.push(...k.rmsnorm.encode({ out, inp: downOut, N: T, C, vectors, weightOffset: w.mlpOutNorm, eps, rstd: a('rstdD') }));
    if (opts.writeOutput) calls.push(...k.add.encode({ out, inp: a('hMid'), n: T * C }));
  } else if (opts.writeOutput) {
    const out = residualOut(g, l);
    calls.push(...k.gemm.encode({ out, a: act, b: { weight: w.down, layout: 'rows-are-n' }, M: T, N: C, K: F, vectors, bias: w.downBias }));
    if (L.down) calls.push(...loraExpand(g, L.down, a('u.down'), out, T));
    calls.push(...k.add.encode({ out, inp: a('hMid'), n: T * C }));
  }
  return calls;
}
