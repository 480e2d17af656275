/**
 * RmsNorm: standalone RMSNorm of rows (rmsnorm.wgsl) for prefill (input / post-attention norms before
 * the GEMMs, the final norm) and the trainer (saves 1/rms per row). Optionally gathers rows by index:
 * the final norm of only the rows lm_head needs (the last token of each sequence).
 * One 256-invocation workgroup per row (64 for C <= 256). Decode folds norms into its GEMVs instead.
 * Reference: reference/rmsnorm.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, placeholder, specCall, specLayout, subgroupsOf } from './common';
import code from './rmsnorm.wgsl?raw';
import { composeShader } from './shader';
import type { KernelSpec } from './spec';

export const RMSNORM_SPEC: KernelSpec = {
  name: 'rmsnorm',
  bindings: {
    inp: { var: 'IN', type: 'f32', access: 'read', doc: 'row n at in_off + n * in_stride' },
    out: { var: 'OUT', type: 'f32', access: 'read_write', doc: 'row n at out_off + n * out_stride' },
    vectors: { var: 'VEC', type: 'f32', access: 'read', doc: 'norm weight at w_off' },
    rows: { var: 'IDX', type: 'u32', access: 'read', doc: 'rows to read (GATHER)' },
    rstd: { var: 'RS', type: 'f32', access: 'read_write', doc: 'rstd per row (RSTD)' },
  },
  uniforms: {
    var: 'P',
    struct: 'Params',
    fields: { N: 'u32', C: 'u32', in_off: 'u32', in_stride: 'u32', out_off: 'u32', out_stride: 'u32', w_off: 'u32', eps: 'f32' },
  },
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

export class RmsNorm {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, RMSNORM_SPEC);
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
    const consts = { WG, BB: 1, GATHER: !!a.rows, RSTD: !!a.rstd, ACCUMULATE: !!a.accumulate };
    const pipeline = this.ctx.pipelines.get({
      label: RMSNORM_SPEC.name,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({
        spec: RMSNORM_SPEC,
        subgroups: subgroupsOf(this.ctx),
        reductions: true,
        consts,
        body: RMSNORM_SPEC.shaders.main,
      }),
    });
    const { N, C, eps } = a;
    return specCall(this.ctx, RMSNORM_SPEC, {
      pipeline,
      layout: this.layout,
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
    });
  }
}
