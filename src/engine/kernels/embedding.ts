/**
 * Embedding: token ids -> rows of the embedding in f32 (embedding.wgsl), over a row-chunked
 * embedding: one call per chunk, each copying the tokens whose ids fall in its rows. Used by prefill
 * (T prompt tokens) and by decode (the B sampled ids, straight from the sampler's output buffer, into
 * the residual block of the DecodeStream). Reference: reference/embedding.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, checkElements, grid, specCall, specLayout } from './common';
import code from './embedding.wgsl?raw';
import { composeShader } from './shader';
import type { KernelSpec } from './spec';

export const EMBEDDING_SPEC: KernelSpec = {
  name: 'embedding',
  bindings: {
    table: {
      var: 'E',
      type: 'vec4<u32>',
      access: 'read',
      doc: 'one row chunk of the embedding, packed (rows row_start.., row stride w_stride)',
      packed: true,
    },
    tokens: { var: 'TOK', type: 'u32', access: 'read', doc: 'token ids [T] from tok_off' },
    out: { var: 'OUT', type: 'f32', access: 'read_write', doc: 'row t at out_off + t * out_stride' },
  },
  uniforms: {
    var: 'P',
    struct: 'Params',
    fields: {
      T: 'u32',
      C: 'u32',
      row_start: 'u32',
      rows: 'u32',
      w_stride: 'u32',
      out_off: 'u32',
      out_stride: 'u32',
      tok_off: 'u32',
      // Gemma's sqrt(hidden_size) normaliser (model/weights.ts embeddingScaleIn); 1 for the other families.
      scale: 'f32',
    },
  },
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

export class Embedding {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, EMBEDDING_SPEC);
  }

  encode(a: EmbeddingArgs): KernelCall[] {
    const E = a.embedding;
    const C = E.cols;
    checkDim('embedding', 'T', a.T);
    const outStride = a.outStride ?? C;
    checkElements('embedding', 'out', a.out, (a.outOffset ?? 0) + (a.T - 1) * outStride + C);
    checkElements('embedding', 'tokens', a.tokens, (a.tokenOffset ?? 0) + a.T);
    const label = `embedding.${E.dtype}`;
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({ spec: EMBEDDING_SPEC, weights: { E: E.dtype }, body: EMBEDDING_SPEC.shaders.main }),
    });
    return E.chunks.map((chunk) =>
      specCall(this.ctx, EMBEDDING_SPEC, {
        label,
        pipeline,
        layout: this.layout,
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
