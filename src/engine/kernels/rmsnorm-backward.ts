/**
 * RmsNormBackward: dx of an RMSNorm with a frozen weight (rmsnorm-backward.wgsl), from the rstd the
 * forward saved (RmsNorm's `rstd` output), for the trainer's input / post-attention / final norms:
 *   dinp (+)= rstd * (dout * w - n * mean(dout * w * n)),  n = x * rstd.
 * One workgroup per row (256 invocations, 64 for C <= 256), like the forward. No weight gradient:
 * base weights are frozen under LoRA (reference/rmsnorm.ts `rmsnormBackward` has dw).
 * Qwen3's per-head q/k norm backward is fused into QkvPrepBackward (qkv-prep-backward.ts).
 * Reference: reference/rmsnorm.ts `rmsnormBackward`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout, subgroupsOf } from './common';
import code from './rmsnorm-backward.wgsl?raw';
import { composeShader } from './shader';

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

export class RmsNormBackward {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'rmsnorm-backward', [
      'read-only-storage', // 0 dout
      'read-only-storage', // 1 x (the forward's input)
      'read-only-storage', // 2 vectors (norm weight)
      'read-only-storage', // 3 rstd
      'storage', // 4 dinp
      'uniform', // 5 params
    ]);
  }

  encode(a: RmsNormBackwardArgs): KernelCall {
    const label = 'rmsnorm-backward';
    checkDim(label, 'N', a.N);
    checkDim(label, 'C', a.C);
    const inStride = a.inStride ?? a.C;
    const doutStride = a.doutStride ?? a.C;
    const dinpStride = a.dinpStride ?? a.C;
    checkElements(label, 'dinp', a.dinp, (a.dinpOffset ?? 0) + (a.N - 1) * dinpStride + a.C);
    checkElements(label, 'dout', a.dout, (a.doutOffset ?? 0) + (a.N - 1) * doutStride + a.C);
    checkElements(label, 'inp', a.inp, (a.inOffset ?? 0) + (a.N - 1) * inStride + a.C);
    checkElements(label, 'rstd', a.rstd, (a.rstdOffset ?? 0) + a.N);
    checkElements(label, 'weight', a.vectors, a.weightOffset + a.C);
    const WG = a.C <= 256 ? 64 : 256;
    const consts = { WG, BB: 1, ACCUM: a.accumulate ?? true };
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({ subgroups: subgroupsOf(this.ctx), reductions: true, consts, body: [code] }),
    });
    const uniforms = packUniforms([
      a.N,
      a.C,
      a.inOffset ?? 0,
      inStride,
      a.doutOffset ?? 0,
      doutStride,
      a.dinpOffset ?? 0,
      dinpStride,
      a.weightOffset,
      a.rstdOffset ?? 0,
    ]);
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.dout, a.inp, a.vectors, a.rstd, a.dinp],
      uniforms,
      workgroups: grid(this.ctx, a.N),
    });
  }
}
