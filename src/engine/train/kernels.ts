/**
 * The kernel families one training session records (STYLE.md "For Hearth" 4: one list), built for
 * its KernelContext and model: the prefill-side forward kernels, train-ops' backward kernels, and
 * the trainer's own (cross-entropy, LoRA gradients, gradient norm, AdamW). Pipelines compile
 * lazily through the context's cache, so sessions of one model share them.
 */
import type { KernelContext } from '../gpu/context';
import { AddInto } from '../kernels/add';
import { AdamW } from '../kernels/adamw';
import { AttentionBackward } from '../kernels/attention-backward';
import { PrefillAttention } from '../kernels/attention-prefill';
import { CrossEntropy } from '../kernels/cross-entropy';
import { Embedding } from '../kernels/embedding';
import { Gemm } from '../kernels/gemm';
import { GradNorm } from '../kernels/grad-norm';
import { LoraGrad } from '../kernels/lora-grad';
import { QkvPrep } from '../kernels/qkv-prep';
import { QkvPrepBackward } from '../kernels/qkv-prep-backward';
import { RmsNorm } from '../kernels/rmsnorm';
import { RmsNormBackward } from '../kernels/rmsnorm-backward';
import { SwiGlu } from '../kernels/swiglu';
import { SwiGluBackward } from '../kernels/swiglu-backward';
import type { ModelConfig } from '../model/config';

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

export function createTrainKernels(ctx: KernelContext, cfg: ModelConfig): TrainKernels {
  const shape = { NH: cfg.numHeads, NKV: cfg.numKvHeads, HS: cfg.headDim };
  // WeightSet keeps q_norm / k_norm as f32 in its vectors buffer.
  const qkNorm = cfg.qkNorm ? { dtype: 'f32' as const, eps: cfg.rmsNormEps } : null;
  return {
    ctx,
    gemm: new Gemm(ctx),
    rmsnorm: new RmsNorm(ctx),
    swiglu: new SwiGlu(ctx),
    add: new AddInto(ctx),
    embedding: new Embedding(ctx),
    qkvPrep: new QkvPrep(ctx, { ...shape, qkNorm }),
    attention: new PrefillAttention(ctx, shape),
    crossEntropy: new CrossEntropy(ctx),
    loraGrad: new LoraGrad(ctx),
    gradNorm: new GradNorm(ctx),
    adamw: new AdamW(ctx),
    rmsnormBackward: new RmsNormBackward(ctx),
    swigluBackward: new SwiGluBackward(ctx),
    attentionBackward: new AttentionBackward(ctx, shape),
    qkvPrepBackward: new QkvPrepBackward(ctx, { ...shape, qkNorm }),
  };
}
