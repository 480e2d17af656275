/**
 * AdamW: one optimizer update of the LoRA parameters on the GPU (adamw.wgsl), PyTorch's AdamW with
 * decoupled weight decay and 1-based bias correction, f32 parameters and moments, the gradient
 * scaled by the clipping factor GradNorm left in `stats[1]`.
 * Reference: reference/adamw.ts `adamwStep`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout } from './common';
import code from './adamw.wgsl?raw';

export interface AdamWHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** 1-based step number of this update (bias correction). */
  step: number;
}

export interface AdamWArgs {
  params: BufferRef;
  grads: BufferRef;
  /** First and second moments (exp_avg, exp_avg_sq). */
  m: BufferRef;
  v: BufferRef;
  /** f32 [2]: stats[1] is the clipping factor. */
  stats: BufferRef;
  n: number;
  hyper: AdamWHyper;
}

export class AdamW {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'adamw', [
      'storage', // 0 parameters
      'read-only-storage', // 1 gradients
      'storage', // 2 exp_avg
      'storage', // 3 exp_avg_sq
      'read-only-storage', // 4 stats (clip factor at [1])
      'uniform', // 5 n and the hyperparameters
    ]);
  }

  encode(a: AdamWArgs): KernelCall {
    checkDim('adamw', 'n', a.n);
    checkDim('adamw', 'step', a.hyper.step);
    for (const [what, ref] of [['params', a.params], ['grads', a.grads], ['m', a.m], ['v', a.v]] as const) checkElements('adamw', what, ref, a.n);
    const { lr, beta1, beta2, eps, weightDecay, step } = a.hyper;
    const bc1 = 1 - beta1 ** step;
    const bc2 = 1 - beta2 ** step;
    return makeCall(this.ctx, {
      label: 'adamw',
      pipeline: this.ctx.pipelines.get({ label: 'adamw', layout: this.layout.pipeline, entryPoint: 'main', code }),
      layout: this.layout.bindGroup,
      buffers: [a.params, a.grads, a.m, a.v, a.stats],
      uniforms: packUniforms([a.n, { f32: lr }, { f32: weightDecay }, { f32: beta1 }, { f32: beta2 }, { f32: eps }, { f32: lr / bc1 }, { f32: Math.sqrt(bc2) }]),
      workgroups: grid(this.ctx, Math.ceil(a.n / 256)),
    });
  }
}
