/**
 * DecodeFinalize: after the last layer of a decode step, residual += pending MLP partials
 * (decode-finalize.wgsl), once, so the lm_head GEMV (gemv.ts with the final norm folded in) reads a
 * plain residual: folding the partials into lm_head itself would repeat the reduction in each of its
 * V / 16 workgroups.
 */
import type { KernelContext } from '../gpu/context';
import type { KernelCall } from '../gpu/kernel-call';
import { checkDim, specCall, specLayout } from './common';
import code from './decode-finalize.wgsl?raw';
import { withDeclarations, type KernelSpec } from './spec';

export const DECODE_FINALIZE_SPEC: KernelSpec = {
  name: 'decode.finalize',
  bindings: {
    stream: { var: 'STREAM', type: 'f32', access: 'read_write', doc: '[1 + P, bcap, C]: residual, pending partials' },
  },
  uniforms: { var: 'P', struct: 'Params', fields: { n: 'u32', C: 'u32', bcap: 'u32', pending: 'u32' } },
  shaders: { main: [code] },
};
import type { DecodeStream } from './decode-stream';

export class DecodeFinalize {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, DECODE_FINALIZE_SPEC);
  }

  encode(stream: DecodeStream, B: number, pending: number): KernelCall {
    checkDim('decode.finalize', 'B', B);
    if (B > stream.rows || pending > stream.partials)
      throw new Error(`decode.finalize: B ${B}, ${pending} partials for a stream of ${stream.rows} rows, ${stream.partials} partials`);
    const label = 'decode.finalize';
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: withDeclarations(DECODE_FINALIZE_SPEC, code),
    });
    return specCall(this.ctx, DECODE_FINALIZE_SPEC, {
      pipeline,
      layout: this.layout,
      buffers: { stream: stream.buffer },
      uniforms: { n: B * stream.C, C: stream.C, bcap: stream.rows, pending },
      workgroups: [Math.ceil((B * stream.C) / 256), 1, 1],
    });
  }
}
