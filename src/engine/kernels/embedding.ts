/**
 * Embedding: token ids -> rows of the embedding in f32 (embedding.wgsl), over a row-chunked
 * embedding: one call per chunk, each copying the tokens whose ids fall in its rows. Used by prefill
 * (T prompt tokens) and by decode (the B sampled ids, straight from the sampler's output buffer, into
 * the residual block of the DecodeStream). Reference: reference/embedding.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, checkElements, grid, kernelLayout } from './common';
import code from './embedding.wgsl?raw';
import { composeShader } from './shader';

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
}

export class Embedding {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'embedding', ['read-only-storage', 'read-only-storage', 'storage', 'uniform']);
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
      code: composeShader({ weights: { E: E.dtype }, body: [code] }),
    });
    return E.chunks.map((chunk) =>
      makeCall(this.ctx, {
        label,
        pipeline,
        layout: this.layout.bindGroup,
        buffers: [chunk.buffer, a.tokens, a.out],
        uniforms: packUniforms([a.T, C, chunk.rowStart, chunk.rows, E.rowStride, a.outOffset ?? 0, outStride, a.tokenOffset ?? 0]),
        workgroups: grid(this.ctx, a.T),
      }),
    );
  }
}
