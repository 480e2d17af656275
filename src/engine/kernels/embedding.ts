/**
 * Embedding: token ids -> rows of the embedding in f32 (embedding.wgsl), over a row-chunked
 * embedding: one call per chunk, each copying the tokens whose ids fall in its rows. Used by prefill
 * (T prompt tokens) and by decode (the B sampled ids, straight from the sampler's output buffer, into
 * the residual block of the DecodeStream). Reference: reference/embedding.ts.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, checkElements, checkRows, grid, SpecKernel } from './spec-kernel';
import code from './embedding.wgsl?raw';
import { packed, params, ro, rw, type KernelSpec } from './spec';

export const EMBEDDING_SPEC: KernelSpec = {
  name: 'embedding',
  bindings: {
    table: packed('E', 'one row chunk of the embedding, packed (rows row_start.., row stride w_stride)'),
    tokens: ro('TOK', 'u32', 'token ids [T] from tok_off'),
    out: rw('OUT', 'f32', 'row t at out_off + t * out_stride'),
  },
  // scale: Gemma's sqrt(hidden_size) normaliser (model/weights/vector-values.ts embeddingScaleOf); 1 for the other families.
  uniforms: params('T C row_start rows w_stride out_off out_stride tok_off scale:f32'),
  shaders: { main: [code] },
};

export interface EmbeddingArgs {
  /** f32: row t at outOffset + t * outStride. */
  out: BufferRef;
  /** u32 token ids, T of them from tokenOffset. */
  tokens: BufferRef;
  tokenOffset?: number;
  embedding: PackedMatrix;
  T: number;
  outOffset?: number;
  outStride?: number;
  /** Each row times this (default 1). */
  scale?: number;
}

export class Embedding extends SpecKernel.of(EMBEDDING_SPEC) {
  encode(a: EmbeddingArgs): KernelCall[] {
    const E = a.embedding;
    const C = E.cols;
    checkDim('embedding', 'T', a.T);
    const outStride = a.outStride ?? C;
    checkRows('embedding', 'out', a.out, a.T, C, outStride, a.outOffset);
    checkElements('embedding', 'tokens', a.tokens, (a.tokenOffset ?? 0) + a.T);
    const label = `embedding.${E.dtype}`;
    const pipeline = this.pipeline({ label, weights: { E: E.dtype } });
    return E.chunks.map((chunk) =>
      this.call({
        label,
        pipeline,
        buffers: { table: chunk.buffer, tokens: a.tokens, out: a.out },
        uniforms: {
          T: a.T,
          C,
          row_start: chunk.rowStart,
          rows: chunk.rows,
          w_stride: E.rowStride,
          out_off: a.outOffset ?? 0,
          out_stride: outStride,
          tok_off: a.tokenOffset ?? 0,
          scale: a.scale ?? 1,
        },
        workgroups: grid(this.ctx, a.T),
      }),
    );
  }
}
