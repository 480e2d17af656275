/**
 * DecodeFinalize: after the last layer of a decode step, residual += pending MLP partials
 * (decode-finalize.wgsl), once, so the lm_head GEMV (gemv.ts with the final norm folded in) reads a
 * plain residual: folding the partials into lm_head itself would repeat the reduction in each of its
 * V / 16 workgroups. With sandwich norms (Gemma) the residual is the stream's `mid` block plus the
 * partials' sum normalised as a whole row (decode-finalize-sandwich.wgsl, a workgroup per row).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, SpecKernel } from './spec-kernel';
import code from './decode-finalize.wgsl?raw';
import sandwichCode from './decode-finalize-sandwich.wgsl?raw';
import branchNorm from './decode-branch-norm.wgsl?raw';
import pendingSum from './decode-pending.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';
import type { DecodeStream } from './decode-stream';

export const DECODE_FINALIZE_SPEC: KernelSpec = {
  name: 'decode.finalize',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P, bcap, C]: residual, pending partials'),
  },
  uniforms: params('n C bcap pending'),
  shaders: { main: [code] },
};

export const DECODE_FINALIZE_SANDWICH_SPEC: KernelSpec = {
  name: 'decode.finalize_sandwich',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P + 2, bcap, C]: residual (written), pending partials, mid'),
    vectors: ro('VEC', 'f32', 'post_feedforward_layernorm at norm_off'),
  },
  // mid_block: the stream block holding the residual before the last MLP's output
  uniforms: params('C bcap pending mid_block norm_off eps:f32'),
  shaders: { main: [pendingSum, branchNorm, sandwichCode] },
};

/** Workgroup of the sandwich variant: one per batch row, walking its C columns. */
const SANDWICH_WG = 256;

export interface DecodeFinalizeArgs {
  stream: DecodeStream;
  B: number;
  pending: number;
  /** Sandwich norms: the last layer's post_feedforward_layernorm (offset in `vectors`) and epsilon. */
  sandwich?: { vectors: BufferRef; norm: number; eps: number };
}

export class DecodeFinalize extends SpecKernel.of(DECODE_FINALIZE_SPEC) {
  /** Folds `pending` MLP partial blocks into the residual of B rows. */
  encode({ stream, B, pending, sandwich }: DecodeFinalizeArgs): KernelCall[] {
    checkDim('decode.finalize', 'B', B);
    if (B > stream.rows || pending > stream.partials)
      throw new Error(`decode.finalize: B ${B}, ${pending} partials for a stream of ${stream.rows} rows, ${stream.partials} partials`);
    if (sandwich) {
      const spec = DECODE_FINALIZE_SANDWICH_SPEC;
      return [
        this.call({
          spec,
          pipeline: this.pipeline({ spec, reductions: true, consts: { WG: SANDWICH_WG, BB: 1 } }),
          buffers: { stream: stream.buffer, vectors: sandwich.vectors },
          uniforms: { C: stream.C, bcap: stream.rows, pending, mid_block: stream.midBlock, norm_off: sandwich.norm, eps: sandwich.eps },
          workgroups: [B, 1, 1],
        }),
      ];
    }
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
