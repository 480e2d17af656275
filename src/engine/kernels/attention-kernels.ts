/**
 * The attention family of one model, built once per KernelContext and ModelConfig (the dense
 * families are in kernels.ts; the generation core builds both): prefill q/k/v preparation, prefill
 * attention, decode attention and the partials merge, plus where their weight inputs live in a
 * WeightSet (q_norm / k_norm and the RoPE table, all in its f32 `vectors` buffer).
 *
 * Not here: the KV cache buffers (model/kv-cache.ts), the graphs that record these calls.
 */
import type { KernelContext } from '../gpu/context';
import type { ModelConfig } from '../model/config';
import type { WeightSet } from '../model/weights';
import { AttentionMerge } from './attention-merge';
import { DecodeAttention, type DecodeAttentionOptions } from './attention-decode';
import { PrefillAttention, type PrefillAttentionOptions } from './attention-prefill';
import { QkvPrep, type QkvPrepIO } from './qkv-prep';

export interface AttentionKernels {
  qkvPrep: QkvPrep;
  prefill: PrefillAttention;
  decode: DecodeAttention;
  merge: AttentionMerge;
}

export interface AttentionKernelOptions {
  prefill?: PrefillAttentionOptions;
  decode?: DecodeAttentionOptions;
}

export function createAttentionKernels(ctx: KernelContext, cfg: ModelConfig, opts: AttentionKernelOptions = {}): AttentionKernels {
  const shape = { NH: cfg.numHeads, NKV: cfg.numKvHeads, HS: cfg.headDim };
  return {
    // WeightSet keeps 1-D tensors (q_norm, k_norm) as f32.
    qkvPrep: new QkvPrep(ctx, { ...shape, qkNorm: cfg.qkNorm ? { dtype: 'f32', eps: cfg.rmsNormEps } : null }),
    prefill: new PrefillAttention(ctx, shape, opts.prefill),
    decode: new DecodeAttention(ctx, shape, opts.decode),
    merge: new AttentionMerge(ctx),
  };
}

/** QkvPrep's weight inputs for `layer` of a WeightSet: q/k norm (Qwen3) and the RoPE table. */
export function qkvPrepWeights(weights: WeightSet, layer: number): Pick<QkvPrepIO, 'qNorm' | 'kNorm' | 'ropeTable'> {
  const w = weights.layers[layer];
  const HS = weights.config.headDim;
  return {
    qNorm: w.qNorm === null ? undefined : weights.vectorBinding(w.qNorm, HS),
    kNorm: w.kNorm === null ? undefined : weights.vectorBinding(w.kNorm, HS),
    ropeTable: weights.ropeTable,
  };
}
