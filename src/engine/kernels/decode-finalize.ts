/**
 * DecodeFinalize: after the last layer of a decode step, residual += pending MLP partials
 * (decode-finalize.wgsl), once, so the lm_head GEMV (gemv.ts with the final norm folded in) reads a
 * plain residual: folding the partials into lm_head itself would repeat the reduction in each of its
 * V / 16 workgroups.
 */
import type { KernelCall } from '../gpu/kernel-call';
import { checkDim, SpecKernel } from './spec-kernel';
import code from './decode-finalize.wgsl?raw';
import { params, rw, type KernelSpec } from './spec';

export const DECODE_FINALIZE_SPEC: KernelSpec = {
  name: 'decode.finalize',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P, bcap, C]: residual, pending partials'),
  },
  uniforms: params('n C bcap pending'),
  shaders: { main: [code] },
};
import type { DecodeStream } from './decode-stream';

export class DecodeFinalize extends SpecKernel.of(DECODE_FINALIZE_SPEC) {
  /** Folds `pending` MLP partial blocks into the residual of B rows. */
  encode({ stream, B, pending }: { stream: DecodeStream; B: number; pending: number }): KernelCall[] {
    checkDim('decode.finalize', 'B', B);
    if (B > stream.rows || pending > stream.partials)
      throw new Error(`decode.finalize: B ${B}, ${pending} partials for a stream of ${stream.rows} rows, ${stream.partials} partials`);
    return [
      this.call({
        pipeline: this.pipeline(),
        buffers: { stream: stream.buffer },
        uniforms: { n: B * stream.C, C: stream.C, bcap: stream.rows, pending },
        workgroups: [Math.ceil((B * stream.C) / 256), 1, 1],
      }),
    ];
  }
}
