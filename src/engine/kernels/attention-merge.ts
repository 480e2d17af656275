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
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, specCall, specLayout, type KernelLayout } from './spec-kernel';
import { withDeclarations, type KernelSpec } from './spec';

export const ATTENTION_MERGE_SPEC: KernelSpec = {
  name: 'attention-merge',
  bindings: {
    out: { var: 'out', type: 'f32', access: 'read_write', doc: '[B, NH * HS]' },
    partials: { var: 'partials', type: 'f32', access: 'read', doc: '[B, NH, numSplits, HS + 2]' },
  },
  uniforms: { var: 'params', struct: 'Params', fields: { NH: 'u32', HS: 'u32', numSplits: 'u32' } },
  shaders: { main: [code] },
};

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
    this.layout = specLayout(ctx, ATTENTION_MERGE_SPEC);
    this.pipeline = ctx.pipelines.get({
      label: 'attention-merge',
      code: withDeclarations(ATTENTION_MERGE_SPEC, code),
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
    return specCall(this.ctx, ATTENTION_MERGE_SPEC, {
      pipeline: this.pipeline,
      layout: this.layout,
      buffers: { out: io.out, partials: io.partials },
      uniforms: { NH, HS, numSplits },
      workgroups: [NH, B, 1],
    });
  }
}
