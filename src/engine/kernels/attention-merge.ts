/**
 * AttentionMerge: decode-attention partials [B, NH, numSplits, HS + 2] -> attention output
 * [B, NH * HS] (the input of o_proj). Used when the o_proj prologue fusion does not fit (many
 * splits: DecodeOProj.fits), and by the tests; the fused DecodeOProj merges the same partials.
 *
 * One workgroup of 64 threads per (head, row); threads own output dims. Not here: producing the
 * partials (attention-decode.ts). Reference: reference/attention-paged.ts `attentionMergePartials`.
 */
import code from './attention-merge.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import { makeCall, packUniforms, type BufferRef, type KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, kernelLayout, type KernelLayout } from './common';

export interface AttentionMergeIO {
  /** f32 [B, NH * HS], written. */
  out: BufferRef;
  /** f32 [B, NH, numSplits, HS + 2]. */
  partials: BufferRef;
}

export interface AttentionMergeDims {
  B: number;
  NH: number;
  HS: number;
  numSplits: number;
}

const WG = 64;

export class AttentionMerge {
  private readonly layout: KernelLayout;
  private readonly pipeline: GPUComputePipeline;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'attention-merge', [
      'storage', // 0 out [B, NH * HS]
      'read-only-storage', // 1 partials [B, NH, numSplits, HS + 2]
      'uniform', // 2 params: NH, HS, numSplits
    ]);
    this.pipeline = ctx.pipelines.get({
      label: 'attention-merge',
      code,
      entryPoint: 'main',
      layout: this.layout.pipeline,
      constants: { WG },
    });
  }

  encode(io: AttentionMergeIO, dims: AttentionMergeDims): KernelCall {
    const { B, NH, HS, numSplits } = dims;
    const label = 'attention-merge';
    for (const [name, v] of Object.entries(dims)) checkDim(label, name, v);
    checkElements(label, 'partials', io.partials, B * NH * numSplits * (HS + 2));
    checkElements(label, 'out', io.out, B * NH * HS);
    return makeCall(this.ctx, {
      label,
      pipeline: this.pipeline,
      layout: this.layout.bindGroup,
      buffers: [io.out, io.partials],
      uniforms: packUniforms([NH, HS, numSplits, 0]),
      workgroups: [NH, B, 1],
    });
  }
}
