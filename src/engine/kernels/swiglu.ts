/**
 * SwiGlu: the prefill MLP activation (swiglu.wgsl), out[t, f] = silu(gate) * up from the fused
 * [gate | up] GEMM output [T, 2F]. Elementwise, one invocation per output.
 * Decode fuses this into DecodeMlp (or Gemv's swiglu epilogue). Reference: reference/swiglu.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout } from './common';
import code from './swiglu.wgsl?raw';

export class SwiGlu {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'swiglu', ['read-only-storage', 'storage', 'uniform']);
  }

  /** out [T, F] (row stride outStride) from gateUp [T, 2F] (row stride inStride). */
  encode(out: BufferRef, gateUp: BufferRef, T: number, F: number, inStride = 2 * F, outStride = F): KernelCall {
    checkDim('swiglu', 'T', T);
    checkDim('swiglu', 'F', F);
    checkElements('swiglu', 'gateUp', gateUp, (T - 1) * inStride + 2 * F);
    checkElements('swiglu', 'out', out, (T - 1) * outStride + F);
    const pipeline = this.ctx.pipelines.get({ label: 'swiglu', layout: this.layout.pipeline, entryPoint: 'main', code });
    return makeCall(this.ctx, {
      label: 'swiglu',
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [gateUp, out],
      uniforms: packUniforms([T, F, inStride, outStride]),
      workgroups: grid(this.ctx, Math.ceil((T * F) / 256)),
    });
  }
}
