/**
 * The one list of kernel families (docs/style.md "For Hearth" 4, issue 15 item 1): every family's spec
 * (spec.ts), which the agreement test checks against its WGSL, and the sets each consumer takes
 * from them, built once per KernelContext: the dense set (prefill, decode and lm_head), the
 * attention set of one model, the generation set of one model runner (sampler, prompt logprobs,
 * LoRA), and the training set.
 * Wrappers compile their pipelines lazily through the context's cache, so building a set is cheap
 * and sets of one context share pipelines.
 *
 * Not here: what a kernel computes (one wrapper and WGSL file per family), the graphs that record
 * the calls (generate/, train/).
 */
import type { KernelContext } from '../gpu/context';
import { AdamW, ADAMW_SPEC } from './adamw';
import { ADD_SPEC, AddInto } from './add';
import { ATTENTION_BACKWARD_SPEC, AttentionBackward } from './attention-backward';
import { DECODE_ATTENTION_SPEC, DecodeAttention, type DecodeAttentionOptions } from './attention-decode';
import { ATTENTION_MERGE_SPEC, AttentionMerge } from './attention-merge';
import { PREFILL_ATTENTION_SPECS, PrefillAttention, type PrefillAttentionOptions } from './attention-prefill';
import { CROSS_ENTROPY_SPEC, CrossEntropy } from './cross-entropy';
import { DECODE_FINALIZE_SPEC, DecodeFinalize } from './decode-finalize';
import { DECODE_LORA_SPEC, DecodeLora } from './decode-lora';
import { DECODE_MLP_LORA_SPEC, DECODE_MLP_SPEC, DecodeMlp } from './decode-mlp';
import { DECODE_O_PROJ_LORA_SPEC, DECODE_O_PROJ_SPEC, DecodeOProj } from './decode-o-proj';
import { DECODE_QKV_LORA_SPEC, DECODE_QKV_SPEC, DecodeQkv } from './decode-qkv';
import { Embedding, EMBEDDING_SPEC } from './embedding';
import { Gemm, GEMM_SPEC } from './gemm';
import { Gemv, GEMV_SPEC } from './gemv';
import { GRAD_NORM_SPEC, GradNorm } from './grad-norm';
import { LmHead } from './lm-head';
import { PromptLogprobs } from './logprobs';
import { LORA_EXPAND_SPEC, LORA_SHRINK_SPEC, LoraKernels } from './lora';
import { LORA_GRAD_SPEC, LoraGrad } from './lora-grad';
import { QKV_PREP_SPEC, QkvPrep, type QkvPrepShape } from './qkv-prep';
import { QUANTIZE_SPEC } from './quantize-blocks';
import { QkvPrepBackward } from './qkv-prep-backward';
import { RMSNORM_SPEC, RmsNorm } from './rmsnorm';
import { RMSNORM_BACKWARD_SPEC, RmsNormBackward } from './rmsnorm-backward';
import { Sampler, type SamplerOptions } from './sampler';
import { PROMPT_LOGPROBS_SPEC, SAMPLER_DRAW_SPEC, SAMPLER_FINISH_SPEC, SAMPLER_PROCESS_SPEC, SAMPLER_SELECT_SPEC } from './sampler-specs';
import type { KernelSpec } from './spec';
import { SWIGLU_SPEC, SwiGlu } from './swiglu';
import { SWIGLU_BACKWARD_SPEC, SwiGluBackward } from './swiglu-backward';

/** Every kernel family's spec; a new family is added here (the agreement test reads this list). */
export const KERNEL_SPECS: readonly KernelSpec[] = [
  GEMM_SPEC,
  GEMV_SPEC,
  RMSNORM_SPEC,
  RMSNORM_BACKWARD_SPEC,
  SWIGLU_SPEC,
  SWIGLU_BACKWARD_SPEC,
  ADD_SPEC,
  EMBEDDING_SPEC,
  DECODE_QKV_SPEC,
  DECODE_O_PROJ_SPEC,
  DECODE_MLP_SPEC,
  DECODE_FINALIZE_SPEC,
  DECODE_LORA_SPEC,
  DECODE_QKV_LORA_SPEC,
  DECODE_O_PROJ_LORA_SPEC,
  DECODE_MLP_LORA_SPEC,
  QKV_PREP_SPEC,
  PREFILL_ATTENTION_SPECS.tiled,
  PREFILL_ATTENTION_SPECS.naive,
  DECODE_ATTENTION_SPEC,
  ATTENTION_MERGE_SPEC,
  ATTENTION_BACKWARD_SPEC,
  LORA_SHRINK_SPEC,
  LORA_EXPAND_SPEC,
  SAMPLER_PROCESS_SPEC,
  SAMPLER_SELECT_SPEC,
  SAMPLER_DRAW_SPEC,
  SAMPLER_FINISH_SPEC,
  PROMPT_LOGPROBS_SPEC,
  LORA_GRAD_SPEC,
  CROSS_ENTROPY_SPEC,
  GRAD_NORM_SPEC,
  ADAMW_SPEC,
  QUANTIZE_SPEC,
];

/** Prefill GEMMs, decode linears and fused decode layer kernels, norms, activations, embedding, lm_head. */
export interface DenseKernels {
  gemm: Gemm;
  gemv: Gemv;
  rmsnorm: RmsNorm;
  swiglu: SwiGlu;
  add: AddInto;
  embedding: Embedding;
  lmHead: LmHead;
  decodeQkv: DecodeQkv;
  decodeOProj: DecodeOProj;
  decodeMlp: DecodeMlp;
  decodeFinalize: DecodeFinalize;
  decodeLora: DecodeLora;
}

export function createDenseKernels(ctx: KernelContext): DenseKernels {
  return {
    gemm: new Gemm(ctx),
    gemv: new Gemv(ctx),
    rmsnorm: new RmsNorm(ctx),
    swiglu: new SwiGlu(ctx),
    add: new AddInto(ctx),
    embedding: new Embedding(ctx),
    lmHead: new LmHead(ctx),
    decodeQkv: new DecodeQkv(ctx),
    decodeOProj: new DecodeOProj(ctx),
    decodeMlp: new DecodeMlp(ctx),
    decodeFinalize: new DecodeFinalize(ctx),
    decodeLora: new DecodeLora(ctx),
  };
}

/** The attention set of one model: prefill q/k/v preparation, prefill and decode attention, the partials merge. */
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

/** A model's attention set, from its attention shape (model/weights/kernel-args.ts `attentionShapeOf`). */
export function createAttentionKernels(ctx: KernelContext, shape: QkvPrepShape, opts: AttentionKernelOptions = {}): AttentionKernels {
  return {
    qkvPrep: new QkvPrep(ctx, shape),
    prefill: new PrefillAttention(ctx, shape, opts.prefill),
    decode: new DecodeAttention(ctx, shape, opts.decode),
    merge: new AttentionMerge(ctx),
  };
}

/** A model runner's own set: the GPU sampler (with its per-slot state), prompt logprobs, batched LoRA. */
export interface GenerationKernels {
  sampler: Sampler;
  promptLogprobs: PromptLogprobs;
  lora: LoraKernels;
}

export function createGenerationKernels(ctx: KernelContext, sampler: SamplerOptions): GenerationKernels {
  return {
    sampler: new Sampler(ctx, sampler),
    promptLogprobs: new PromptLogprobs(ctx, sampler.workgroupSize),
    lora: new LoraKernels(ctx),
  };
}

/** What one training session records: the prefill-side forward, the backward kernels, the trainer's own. */
export interface TrainKernels {
  ctx: KernelContext;
  gemm: Gemm;
  rmsnorm: RmsNorm;
  swiglu: SwiGlu;
  add: AddInto;
  embedding: Embedding;
  qkvPrep: QkvPrep;
  attention: PrefillAttention;
  crossEntropy: CrossEntropy;
  loraGrad: LoraGrad;
  gradNorm: GradNorm;
  adamw: AdamW;
  rmsnormBackward: RmsNormBackward;
  swigluBackward: SwiGluBackward;
  attentionBackward: AttentionBackward;
  qkvPrepBackward: QkvPrepBackward;
}

/** A training session's set, from its model's attention shape (model/weights/kernel-args.ts `attentionShapeOf`). */
export function createTrainKernels(ctx: KernelContext, shape: QkvPrepShape): TrainKernels {
  return {
    ctx,
    gemm: new Gemm(ctx),
    rmsnorm: new RmsNorm(ctx),
    swiglu: new SwiGlu(ctx),
    add: new AddInto(ctx),
    embedding: new Embedding(ctx),
    qkvPrep: new QkvPrep(ctx, shape),
    attention: new PrefillAttention(ctx, shape),
    crossEntropy: new CrossEntropy(ctx),
    loraGrad: new LoraGrad(ctx),
    gradNorm: new GradNorm(ctx),
    adamw: new AdamW(ctx),
    rmsnormBackward: new RmsNormBackward(ctx),
    swigluBackward: new SwiGluBackward(ctx),
    attentionBackward: new AttentionBackward(ctx, shape),
    qkvPrepBackward: new QkvPrepBackward(ctx, shape),
  };
}
