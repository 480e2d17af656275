/**
 * LmHead: final RMSNorm + projection on the (possibly row-chunked) lm_head into logits [R, V] that
 * stay on the GPU for the sampler.
 *
 * - Decode (`encode` with a `stream`): one Gemv per chunk over the DecodeStream's residual with the
 *   final norm folded into its activation load (each workgroup recomputes the row's rms: C floats per
 *   batch row, what a plain GEMV reads anyway). Run DecodeFinalize first so no MLP partials are pending.
 * - Prefill (`encode` with `hidden` rows): the final norm of only the rows wanted (gathered by index:
 *   the last token of each sequence, or every row when prompt logprobs are asked), then Gemv for up
 *   to 64 rows or the tiled Gemm beyond, one call per chunk writing its own vocabulary range.
 *
 * A composition of RmsNorm, Gemv and Gemm: no spec of its own.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkElements } from './spec-kernel';
import type { DecodeStream } from './decode-stream';
import { Gemm } from './gemm';
import { Gemv } from './gemv';
import { RmsNorm } from './rmsnorm';

/** The model's head as lm_head reads it (the caller resolves it from its weights and config). */
export interface LmHeadWeights {
  /** [V, C] (the embedding matrix when tied). */
  lmHead: PackedMatrix;
  /** f32: the final norm weight at finalNorm. */
  vectors: GPUBuffer;
  finalNorm: number;
  /** Hidden size. */
  C: number;
  /** Vocabulary size. */
  V: number;
  /** RMSNorm epsilon. */
  eps: number;
}

/** Decode: logits [B, V] from the stream's residual (no pending partials), final norm folded in. */
export interface LmHeadDecodeArgs {
  head: LmHeadWeights;
  /** f32 [B, V], written. */
  logits: BufferRef;
  stream: DecodeStream;
  B: number;
}

/** Prefill: logits [R, V] of R rows of hidden states (gathered by index), through a scratch for the normalised rows. */
export interface LmHeadRowsArgs {
  head: LmHeadWeights;
  /** f32 [R, V], written. */
  logits: BufferRef;
  /** f32 hidden states (the residual stream after the last layer), row t at hiddenOffset + t * C. */
  hidden: BufferRef;
  hiddenOffset?: number;
  /** Rows to project. */
  R: number;
  /** u32 [R]: hidden rows to project; absent: rows 0 .. R-1. */
  rows?: BufferRef;
  /** f32 [R, C] scratch for the normalised rows. */
  scratch: BufferRef;
}

export type LmHeadArgs = LmHeadDecodeArgs | LmHeadRowsArgs;

export class LmHead {
  private readonly gemv: Gemv;
  private readonly gemm: Gemm;
  private readonly norm: RmsNorm;

  constructor(ctx: KernelContext) {
    this.gemv = new Gemv(ctx);
    this.gemm = new Gemm(ctx);
    this.norm = new RmsNorm(ctx);
  }

  /** The calls of either form: decode (`stream`) or rows (`hidden`). */
  encode(a: LmHeadArgs): KernelCall[] {
    return 'stream' in a ? this.encodeDecode(a) : this.encodeRows(a);
  }

  private encodeRows(a: LmHeadRowsArgs): KernelCall[] {
    const { C, V } = a.head;
    checkElements('lm_head', 'logits', a.logits, a.R * V);
    const norm = this.norm.encode({
      out: a.scratch,
      inp: a.hidden,
      inOffset: a.hiddenOffset ?? 0,
      N: a.R,
      C,
      vectors: a.head.vectors,
      weightOffset: a.head.finalNorm,
      eps: a.head.eps,
      rows: a.rows,
    });
    const project =
      a.R <= 64
        ? this.gemv.encode({ out: a.logits, x: a.scratch, weight: a.head.lmHead, B: a.R })
        : this.gemm.encode({ out: a.logits, a: a.scratch, b: { weight: a.head.lmHead, layout: 'rows-are-n' }, M: a.R, N: V, K: C });
    return [...norm, ...project];
  }

  private encodeDecode(a: LmHeadDecodeArgs): KernelCall[] {
    const { head } = a;
    return this.gemv.encode({
      out: a.logits,
      x: a.stream.buffer,
      weight: head.lmHead,
      B: a.B,
      vectors: head.vectors,
      norm: { offset: head.finalNorm, eps: head.eps },
    });
  }
}
