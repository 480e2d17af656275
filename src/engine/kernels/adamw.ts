/**
 * AdamW: one optimizer update of the LoRA parameters on the GPU (adamw.wgsl), PyTorch's AdamW with
 * decoupled weight decay and 1-based bias correction, f32 parameters and moments, the gradient
 * scaled by the clipping factor GradNorm left in `stats[1]`.
 * Reference: reference/adamw.ts `adamwStep`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, specCall, specLayout } from './common';
import code from './adamw.wgsl?raw';
import { withDeclarations, type KernelSpec } from './spec';

export const ADAMW_SPEC: KernelSpec = {
  name: 'adamw',
  bindings: {
    params: { var: 'PARAM', type: 'f32', access: 'read_write', doc: 'parameters [n]' },
    grads: { var: 'GRAD', type: 'f32', access: 'read', doc: 'gradients [n]' },
    m: { var: 'M1', type: 'f32', access: 'read_write', doc: 'exp_avg [n]' },
    v: { var: 'M2', type: 'f32', access: 'read_write', doc: 'exp_avg_sq [n]' },
    stats: { var: 'STATS', type: 'f32', access: 'read', doc: 'grad-norm stats: the clip factor at [1]' },
  },
  uniforms: {
    var: 'P',
    struct: 'Params',
    // step_size = lr / bc1, bc2_sqrt = sqrt(bc2)
    fields: { n: 'u32', lr: 'f32', wd: 'f32', b1: 'f32', b2: 'f32', eps: 'f32', step_size: 'f32', bc2_sqrt: 'f32' },
  },
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

export class AdamW {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, ADAMW_SPEC);
  }

  encode(a: AdamWArgs): KernelCall {
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
    return specCall(this.ctx, ADAMW_SPEC, {
      pipeline: this.ctx.pipelines.get({
        label: 'adamw',
        layout: this.layout.pipeline,
        entryPoint: 'main',
        code: withDeclarations(ADAMW_SPEC, code),
      }),
      layout: this.layout,
      buffers: { params: a.params, grads: a.grads, m: a.m, v: a.v, stats: a.stats },
      uniforms: { n: a.n, lr, wd: weightDecay, b1: beta1, b2: beta2, eps, step_size: lr / bc1, bc2_sqrt: Math.sqrt(bc2) },
      workgroups: grid(this.ctx, Math.ceil(a.n / 256)),
    });
  }
}
