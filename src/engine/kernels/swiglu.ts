/**
 * SwiGlu: the prefill MLP activation (swiglu.wgsl), out[t, f] = silu(gate) * up from the fused
 * [gate | up] GEMM output [T, 2F], or Gemma's GeGLU gelu_tanh(gate) * up. Elementwise, one
 * invocation per output.
 * Decode fuses this into DecodeMlp (or Gemv's swiglu epilogue). Reference: reference/swiglu.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { MlpActivation } from '../model/config';
import { checkDim, checkElements, grid, specCall, specLayout } from './common';
import { composeShader } from './shader';
import type { KernelSpec } from './spec';
import activation from './activation.wgsl?raw';
import code from './swiglu.wgsl?raw';

export const SWIGLU_SPEC: KernelSpec = {
  name: 'swiglu',
  bindings: {
    gateUp: { var: 'GU', type: 'f32', access: 'read', doc: '[T, 2F] gate | up, row stride in_stride' },
    out: { var: 'OUT', type: 'f32', access: 'read_write', doc: '[T, F], row stride out_stride' },
  },
  uniforms: { var: 'P', struct: 'Params', fields: { T: 'u32', F: 'u32', in_stride: 'u32', out_stride: 'u32' } },
  shaders: { main: [activation, code] },
};

export class SwiGlu {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, SWIGLU_SPEC);
  }

  /** out [T, F] (row stride outStride) from gateUp [T, 2F] (row stride inStride). */
  encode(
    out: BufferRef,
    gateUp: BufferRef,
    T: number,
    F: number,
    { act = 'silu', inStride = 2 * F, outStride = F }: { act?: MlpActivation; inStride?: number; outStride?: number } = {},
  ): KernelCall {
    checkDim('swiglu', 'T', T);
    checkDim('swiglu', 'F', F);
    checkElements('swiglu', 'gateUp', gateUp, (T - 1) * inStride + 2 * F);
    checkElements('swiglu', 'out', out, (T - 1) * outStride + F);
    const pipeline = this.ctx.pipelines.get({
      label: `swiglu.${act}`,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({ spec: SWIGLU_SPEC, consts: { GELU: act === 'gelu_tanh' }, body: SWIGLU_SPEC.shaders.main }),
    });
    return specCall(this.ctx, SWIGLU_SPEC, {
      pipeline,
      layout: this.layout,
      buffers: { gateUp, out },
      uniforms: { T, F, in_stride: inStride, out_stride: outStride },
      workgroups: grid(this.ctx, Math.ceil((T * F) / 256)),
    });
  }
}
