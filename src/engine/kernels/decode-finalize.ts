/**
 * DecodeFinalize: after the last layer of a decode step, residual += pending MLP partials
 * (decode-finalize.wgsl), once, so the lm_head GEMV (gemv.ts with the final norm folded in) reads a
 * plain residual: folding the partials into lm_head itself would repeat the reduction in each of its
 * V / 16 workgroups.
 */
import type { KernelContext } from '../gpu/context';
import type { KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, kernelLayout } from './common';
import code from './decode-finalize.wgsl?raw';
import type { DecodeStream } from './decode-stream';

export class DecodeFinalize {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'decode.finalize', ['storage', 'uniform']);
  }

  encode(stream: DecodeStream, B: number, pending: number): KernelCall {
    checkDim('decode.finalize', 'B', B);
    if (B > stream.rows || pending > stream.partials) throw new Error(`decode.finalize: B ${B}, ${pending} partials for a stream of ${stream.rows} rows, ${stream.partials} partials`);
    const label = 'decode.finalize';
    const pipeline = this.ctx.pipelines.get({ label, layout: this.layout.pipeline, entryPoint: 'main', code });
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [stream.buffer],
      uniforms: packUniforms([B * stream.C, stream.C, stream.rows, pending]),
      workgroups: [Math.ceil((B * stream.C) / 256), 1, 1],
    });
  }
}
