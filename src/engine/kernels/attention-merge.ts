/**
 * AttentionMerge: decode-attention partials [B, NH, numSplits, HS + 2] -> attention output
 * [B, NH * HS] (the input of o_proj). Used when the o_proj prologue fusion does not fit (many
 * splits: DecodeOProj.fits), and by the tests; the fused DecodeOProj merges the same partials.
 *
 * One workgroup of 64 threads per (head, row); threads own output dims. Not here: producing the
 * partials (attention-decode.ts). Reference: reference/attention-paged.ts `attentionMergePartials`.
 */
import code from './attention-merge.wgsl?raw';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import { params, ro, rw, type KernelSpec } from './spec';

export const ATTENTION_MERGE_SPEC: KernelSpec = {
  name: 'attention-merge',
  bindings: {
    out: rw('out', 'f32', '[B, NH * HS]'),
    partials: ro('partials', 'f32', '[B, NH, numSplits, HS + 2]'),
  },
  uniforms: params('NH HS numSplits', { var: 'params' }),
  shaders: { main: [code] },
};

export interface AttentionMergeArgs {
  /** f32 [B, NH * HS], written. */
  out: BufferRef;
  /** f32 [B, NH, numSplits, HS + 2]. */
  partials: BufferRef;
  B: number;
  NH: number;
  HS: number;
  numSplits: number;
}

const WG = 64;

export class AttentionMerge extends SpecKernel.of(ATTENTION_MERGE_SPEC) {
  encode(a: AttentionMergeArgs): KernelCall[] {
    const { B, NH, HS, numSplits } = a;
    const label = 'attention-merge';
    for (const [name, v] of Object.entries({ B, NH, HS, numSplits })) checkDim(label, name, v);
    checkElements(label, 'partials', a.partials, B * NH * numSplits * (HS + 2));
    checkElements(label, 'out', a.out, B * NH * HS);
    return [
      this.call({
        pipeline: this.pipeline({ overrides: { WG } }),
        buffers: { out: a.out, partials: a.partials },
        uniforms: { NH, HS, numSplits },
        workgroups: [NH, B, 1],
      }),
    ];
  }
}
