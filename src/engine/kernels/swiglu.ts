/**
 * SwiGlu: the prefill MLP activation (swiglu.wgsl), out[t, f] = silu(gate) * up from the fused
 * [gate | up] GEMM output [T, 2F], or Gemma's GeGLU gelu_tanh(gate) * up. Elementwise, one
 * invocation per output.
 * Decode fuses this into DecodeMlp (or Gemv's swiglu epilogue). Reference: reference/swiglu.ts.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkRows, grid, SpecKernel } from './spec-kernel';
import { params, ro, rw, type KernelSpec } from './spec';
import activation from './activation.wgsl?raw';
import geluTanh from './gelu-tanh.wgsl?raw';
import code from './swiglu.wgsl?raw';

/** The MLP's gate activation (activation.wgsl, gelu-tanh.wgsl): SiLU (SwiGLU) or Gemma's tanh-approximated GELU (GeGLU). */
export type MlpActivation = 'silu' | 'gelu_tanh';

export const SWIGLU_SPEC: KernelSpec = {
  name: 'swiglu',
  bindings: {
    gateUp: ro('GU', 'f32', '[T, 2F] gate | up, row stride in_stride'),
    out: rw('OUT', 'f32', '[T, F], row stride out_stride'),
  },
  uniforms: params('T F in_stride out_stride'),
  shaders: { main: [geluTanh, activation, code] },
};

export interface SwiGluArgs {
  /** f32 [T, F], row stride outStride (default F), written. */
  out: BufferRef;
  /** f32 [T, 2F]: gate then up, row stride inStride (default 2F). */
  gateUp: BufferRef;
  T: number;
  F: number;
  act?: MlpActivation;
  inStride?: number;
  outStride?: number;
}

export class SwiGlu extends SpecKernel.of(SWIGLU_SPEC) {
  /** out [T, F] (row stride outStride) from gateUp [T, 2F] (row stride inStride). */
  encode({ out, gateUp, T, F, act = 'silu', inStride = 2 * F, outStride = F }: SwiGluArgs): KernelCall[] {
    checkDim('swiglu', 'T', T);
    checkDim('swiglu', 'F', F);
    checkRows('swiglu', 'gateUp', gateUp, T, 2 * F, inStride);
    checkRows('swiglu', 'out', out, T, F, outStride);
    return [
      this.call({
        pipeline: this.pipeline({ label: `swiglu.${act}`, consts: { GELU: act === 'gelu_tanh' } }),
        buffers: { gateUp, out },
        uniforms: { T, F, in_stride: inStride, out_stride: outStride },
        workgroups: grid(this.ctx, Math.ceil((T * F) / 256)),
      }),
    ];
  }
}
