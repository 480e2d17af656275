/**
 * AdamW: one optimizer update of the LoRA parameters on the GPU (adamw.wgsl), PyTorch's AdamW with
 * decoupled weight decay and 1-based bias correction, f32 parameters and moments, the gradient
 * scaled by the clipping factor GradNorm left in `stats[1]`.
 * Reference: reference/adamw.ts `adamwStep`.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, SpecKernel } from './spec-kernel';
import code from './adamw.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const ADAMW_SPEC: KernelSpec = {
  name: 'adamw',
  bindings: {
    params: rw('PARAM', 'f32', 'parameters [n]'),
    grads: ro('GRAD', 'f32', 'gradients [n]'),
    m: rw('M1', 'f32', 'exp_avg [n]'),
    v: rw('M2', 'f32', 'exp_avg_sq [n]'),
    stats: ro('STATS', 'f32', 'grad-norm stats: the clip factor at [1]'),
  },
  // step_size = lr / bc1, bc2_sqrt = sqrt(bc2)
  uniforms: params('n lr:f32 wd:f32 b1:f32 b2:f32 eps:f32 step_size:f32 bc2_sqrt:f32'),
  shaders: { main: [code] },
};

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

export class AdamW extends SpecKernel.of(ADAMW_SPEC) {
  encode(a: AdamWArgs): KernelCall[] {
    checkDim('adamw', 'n', a.n);
    checkDim('adamw', 'step', a.hyper.step);
    for (const [what, ref] of [
      ['params', a.params],
      ['grads', a.grads],
      ['m', a.m],
      ['v', a.v],
    ] as const)
      checkElements('adamw', what, ref, a.n);
    const { lr, beta1, beta2, eps, weightDecay, step } = a.hyper;
    const bc1 = 1 - beta1 ** step;
    const bc2 = 1 - beta2 ** step;
    return [
      this.call({
        pipeline: this.pipeline(),
        buffers: { params: a.params, grads: a.grads, m: a.m, v: a.v, stats: a.stats },
        uniforms: { n: a.n, lr, wd: weightDecay, b1: beta1, b2: beta2, eps, step_size: lr / bc1, bc2_sqrt: Math.sqrt(bc2) },
        workgroups: grid(this.ctx, Math.ceil(a.n / 256)),
      }),
    ];
  }
}
