/**
 * RmsNorm: standalone RMSNorm of rows (rmsnorm.wgsl) for prefill (input / post-attention norms before
 * the GEMMs, the final norm) and the trainer (saves 1/rms per row). Optionally gathers rows by index:
 * the final norm of only the rows lm_head needs (the last token of each sequence).
 * One 256-invocation workgroup per row (64 for C <= 256). Decode folds norms into its GEMVs instead.
 * Reference: reference/rmsnorm.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout, placeholder, subgroupsOf } from './common';
import code from './rmsnorm.wgsl?raw';
import { composeShader } from './shader';

export interface RmsNormArgs {
  out: BufferRef;
  inp: BufferRef;
  /** Rows to normalise (N) and the row length C. */
  N: number;
  C: number;
  /** Norm weight: C f32 values at `weightOffset` of `vectors`. */
  vectors: GPUBuffer;
  weightOffset: number;
  eps: number;
  inOffset?: number;
  inStride?: number;
  outOffset?: number;
  outStride?: number;
  /** u32 [N]: output row n normalises input row rows[n]. */
  rows?: BufferRef;
  /** f32 [N]: receives 1 / rms of each row. */
  rstd?: BufferRef;
}

export class RmsNorm {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'rmsnorm', ['read-only-storage', 'storage', 'read-only-storage', 'read-only-storage', 'storage', 'uniform']);
  }

  encode(a: RmsNormArgs): KernelCall {
    checkDim('rmsnorm', 'N', a.N);
    checkDim('rmsnorm', 'C', a.C);
    const inStride = a.inStride ?? a.C;
    const outStride = a.outStride ?? a.C;
    checkElements('rmsnorm', 'out', a.out, (a.outOffset ?? 0) + (a.N - 1) * outStride + a.C);
    if (!a.rows) checkElements('rmsnorm', 'inp', a.inp, (a.inOffset ?? 0) + (a.N - 1) * inStride + a.C);
    checkElements('rmsnorm', 'weight', a.vectors, a.weightOffset + a.C);
    const WG = a.C <= 256 ? 64 : 256;
    const consts = { WG, BB: 1, GATHER: !!a.rows, RSTD: !!a.rstd };
    const label = 'rmsnorm';
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({ subgroups: subgroupsOf(this.ctx), reductions: true, consts, body: [code] }),
    });
    const uniforms = packUniforms([a.N, a.C, a.inOffset ?? 0, inStride, a.outOffset ?? 0, outStride, a.weightOffset, { f32: a.eps }]);
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.inp, a.out, a.vectors, a.rows ?? placeholder(this.ctx), a.rstd ?? placeholder(this.ctx, 'write')],
      uniforms,
      workgroups: grid(this.ctx, a.N),
    });
  }
}
