/**
 * RmsNorm: standalone RMSNorm of rows (rmsnorm.wgsl) for prefill (input / post-attention norms before
 * the GEMMs, the final norm) and the trainer (saves 1/rms per row). Optionally gathers rows by index:
 * the final norm of only the rows lm_head needs (the last token of each sequence).
 * One 256-invocation workgroup per row (64 for C <= 256). Decode folds norms into its GEMVs instead.
 * Reference: reference/rmsnorm.ts.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, checkRows, grid, placeholder, SpecKernel } from './spec-kernel';
import code from './rmsnorm.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const RMSNORM_SPEC: KernelSpec = {
  name: 'rmsnorm',
  bindings: {
    inp: ro('IN', 'f32', 'row n at in_off + n * in_stride'),
    out: rw('OUT', 'f32', 'row n at out_off + n * out_stride'),
    vectors: ro('VEC', 'f32', 'norm weight at w_off'),
    rows: ro('IDX', 'u32', 'rows to read (GATHER)'),
    rstd: rw('RS', 'f32', 'rstd per row (RSTD)'),
  },
  uniforms: params('N C in_off in_stride out_off out_stride w_off eps:f32'),
  shaders: { main: [code] },
};

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
  /** out += the normalised row instead of out =: Gemma's post-attention / post-feedforward norms,
   *  whose output goes straight into the residual (`inp` and `out` must be different buffers). */
  accumulate?: boolean;
}

export class RmsNorm extends SpecKernel.of(RMSNORM_SPEC) {
  encode(a: RmsNormArgs): KernelCall[] {
    checkDim('rmsnorm', 'N', a.N);
    checkDim('rmsnorm', 'C', a.C);
    const inStride = a.inStride ?? a.C;
    const outStride = a.outStride ?? a.C;
    checkRows('rmsnorm', 'out', a.out, a.N, a.C, outStride, a.outOffset);
    if (!a.rows) checkRows('rmsnorm', 'inp', a.inp, a.N, a.C, inStride, a.inOffset);
    checkElements('rmsnorm', 'weight', a.vectors, a.weightOffset + a.C);
    const WG = a.C <= 256 ? 64 : 256;
    const consts = { WG, BB: 1, GATHER: !!a.rows, RSTD: !!a.rstd, ACCUMULATE: !!a.accumulate };
    const { N, C, eps } = a;
    return [
      this.call({
        pipeline: this.pipeline({ reductions: true, consts }),
        buffers: {
          inp: a.inp,
          out: a.out,
          vectors: a.vectors,
          rows: a.rows ?? placeholder(this.ctx),
          rstd: a.rstd ?? placeholder(this.ctx, 'write'),
        },
        uniforms: {
          N,
          C,
          in_off: a.inOffset ?? 0,
          in_stride: inStride,
          out_off: a.outOffset ?? 0,
          out_stride: outStride,
          w_off: a.weightOffset,
          eps,
        },
        workgroups: grid(this.ctx, a.N),
      }),
    ];
  }
}
