/**
 * GradNorm: the global L2 norm of the LoRA gradients and the clipping factor min(1, max / (norm +
 * 1e-6)) (grad-norm.wgsl), left on the GPU for AdamW and read back with the step's metrics. Two
 * dispatches: per-slice sums of squares, then one workgroup sums the slices. Fixed reduction trees
 * (no subgroups, no atomics): bit-identical results run after run.
 * Reference: reference/adamw.ts `clipGradNorm`.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import code from './grad-norm.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const GRAD_NORM_SPEC: KernelSpec = {
  name: 'grad-norm',
  bindings: {
    grads: ro('GRAD', 'f32', 'gradients [n]'),
    part: rw('PART', 'f32', 'partial sums of squares [parts]'),
    stats: rw('STATS', 'f32', '[2]: norm, clip factor'),
  },
  uniforms: params('n chunk parts max_norm:f32'),
  shaders: { main: [code] },
};

/** Slices of the partial pass: enough workgroups to spread a few million gradients, few enough for one finishing workgroup. */
const MAX_PARTS = 1024;
const MIN_CHUNK = 4096;

export interface GradNormArgs {
  grads: BufferRef;
  n: number;
  /** f32 scratch of at least `GradNorm.partsFor(n)` floats. */
  part: BufferRef;
  /** f32 [2]: norm, clip factor (written). */
  stats: BufferRef;
  /** 0 disables clipping (the factor is 1). */
  maxNorm: number;
}

export class GradNorm extends SpecKernel.of(GRAD_NORM_SPEC) {
  static partsFor(n: number): number {
    return Math.min(MAX_PARTS, Math.max(1, Math.ceil(n / MIN_CHUNK)));
  }

  encode(a: GradNormArgs): KernelCall[] {
    checkDim('grad-norm', 'n', a.n);
    checkElements('grad-norm', 'grads', a.grads, a.n);
    const parts = GradNorm.partsFor(a.n);
    const chunk = Math.ceil(a.n / parts);
    checkElements('grad-norm', 'part', a.part, parts);
    checkElements('grad-norm', 'stats', a.stats, 2);
    const call = (entryPoint: string, workgroups: number) =>
      this.call({
        label: `grad-norm.${entryPoint}`,
        pipeline: this.pipeline({ label: `grad-norm.${entryPoint}`, entryPoint }),
        buffers: { grads: a.grads, part: a.part, stats: a.stats },
        uniforms: { n: a.n, chunk, parts, max_norm: a.maxNorm },
        workgroups: [workgroups, 1, 1],
      });
    return [call('partial', parts), call('finish', 1)];
  }
}
