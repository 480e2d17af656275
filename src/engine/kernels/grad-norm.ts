/**
 * GradNorm: the global L2 norm of the LoRA gradients and the clipping factor min(1, max / (norm +
 * 1e-6)) (grad-norm.wgsl), left on the GPU for AdamW and read back with the step's metrics. Two
 * dispatches: per-slice sums of squares, then one workgroup sums the slices. Fixed reduction trees
 * (no subgroups, no atomics): bit-identical results run after run.
 * Reference: reference/adamw.ts `clipGradNorm`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, kernelLayout } from './common';
import code from './grad-norm.wgsl?raw';

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

export class GradNorm {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'grad-norm', [
      'read-only-storage', // 0 gradients
      'storage', // 1 partial sums of squares
      'storage', // 2 stats: norm, clip
      'uniform', // 3 n, chunk, parts, maxNorm
    ]);
  }

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
    const uniforms = packUniforms([a.n, chunk, parts, { f32: a.maxNorm }]);
    const call = (entryPoint: string, workgroups: number) =>
      makeCall(this.ctx, {
        label: `grad-norm.${entryPoint}`,
        pipeline: this.ctx.pipelines.get({ label: `grad-norm.${entryPoint}`, layout: this.layout.pipeline, entryPoint, code }),
        layout: this.layout.bindGroup,
        buffers: [a.grads, a.part, a.stats],
        uniforms,
        workgroups: [workgroups, 1, 1],
      });
    return [call('partial', parts), call('finish', 1)];
  }
}
