/**
 * RmsNormBackward: dx of an RMSNorm with a frozen weight (rmsnorm-backward.wgsl), from the rstd the
 * forward saved (RmsNorm's `rstd` output), for the trainer's input / post-attention / final norms:
 *   dinp (+)= rstd * (dout * w - n * mean(dout * w * n)),  n = x * rstd.
 * One workgroup per row (256 invocations, 64 for C <= 256), like the forward. No weight gradient:
 * base weights are frozen under LoRA (reference/rmsnorm.ts `rmsnormBackward` has dw).
 * Qwen3's per-head q/k norm backward is fused into QkvPrepBackward (qkv-prep-backward.ts).
 * Reference: reference/rmsnorm.ts `rmsnormBackward`.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, checkRows, grid, SpecKernel } from './spec-kernel';
import code from './rmsnorm-backward.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const RMSNORM_BACKWARD_SPEC: KernelSpec = {
  name: 'rmsnorm-backward',
  bindings: {
    dout: ro('DOUT', 'f32', 'dout[n, c] at dout_off + n * dout_stride + c'),
    inp: ro('IN', 'f32', "the forward's input x[n, c] at in_off + n * in_stride + c"),
    vectors: ro('VEC', 'f32', 'norm weight w[c] at w_off + c'),
    rstd: ro('RS', 'f32', 'rstd[n] at rstd_off + n (saved by the forward)'),
    dinp: rw('DINP', 'f32', 'dinp[n, c] at dinp_off + n * dinp_stride + c'),
  },
  uniforms: params('N C in_off in_stride dout_off dout_stride dinp_off dinp_stride w_off rstd_off'),
  shaders: { main: [code] },
};

export interface RmsNormBackwardArgs {
  /** f32 gradient of the input rows (element (n, c) at dinpOffset + n * dinpStride + c), written or accumulated. */
  dinp: BufferRef;
  /** f32 gradient of the norm's output rows. */
  dout: BufferRef;
  /** f32 input rows of the forward (x). */
  inp: BufferRef;
  /** f32 [N] (at rstdOffset): 1 / rms of each row, saved by the forward. */
  rstd: BufferRef;
  /** Norm weight: C f32 values at `weightOffset` of `vectors` (the WeightSet's vectors buffer). */
  vectors: GPUBuffer;
  weightOffset: number;
  N: number;
  C: number;
  /** Add into dinp (default true: the residual stream's gradient already holds the skip path). */
  accumulate?: boolean;
  inOffset?: number;
  inStride?: number;
  doutOffset?: number;
  doutStride?: number;
  dinpOffset?: number;
  dinpStride?: number;
  rstdOffset?: number;
}

export class RmsNormBackward extends SpecKernel.of(RMSNORM_BACKWARD_SPEC) {
  encode(a: RmsNormBackwardArgs): KernelCall[] {
    const label = 'rmsnorm-backward';
    checkDim(label, 'N', a.N);
    checkDim(label, 'C', a.C);
    const inStride = a.inStride ?? a.C;
    const doutStride = a.doutStride ?? a.C;
    const dinpStride = a.dinpStride ?? a.C;
    checkRows(label, 'dinp', a.dinp, a.N, a.C, dinpStride, a.dinpOffset);
    checkRows(label, 'dout', a.dout, a.N, a.C, doutStride, a.doutOffset);
    checkRows(label, 'inp', a.inp, a.N, a.C, inStride, a.inOffset);
    checkElements(label, 'rstd', a.rstd, (a.rstdOffset ?? 0) + a.N);
    checkElements(label, 'weight', a.vectors, a.weightOffset + a.C);
    const WG = a.C <= 256 ? 64 : 256;
    const consts = { WG, BB: 1, ACCUM: a.accumulate ?? true };
    return [
      this.call({
        pipeline: this.pipeline({ reductions: true, consts }),
        buffers: { dout: a.dout, inp: a.inp, vectors: a.vectors, rstd: a.rstd, dinp: a.dinp },
        uniforms: {
          N: a.N,
          C: a.C,
          in_off: a.inOffset ?? 0,
          in_stride: inStride,
          dout_off: a.doutOffset ?? 0,
          dout_stride: doutStride,
          dinp_off: a.dinpOffset ?? 0,
          dinp_stride: dinpStride,
          w_off: a.weightOffset,
          rstd_off: a.rstdOffset ?? 0,
        },
        workgroups: grid(this.ctx, a.N),
      }),
    ];
  }
}
