/**
 * AttentionMerge: decode-attention partials [B, NH, numSplits, HS + 2] -> attention output
 * [B, NH * HS] (the input of o_proj). Used when the o_proj prologue fusion is off, and by the tests.
 * The dense engineer's fused o_proj merges the same partials in its prologue (docs/engine.md).
 *
 * One workgroup of 64 threads per (head, row); threads own output dims. Not here: producing the
 * partials (attention-decode.ts). Reference: reference/attention-paged.ts `attentionMergePartials`.
 */
import code from './attention-merge.wgsl?raw';
import { bindGroupLayout, type PipelineCache } from '../gpu/pipelines';
import { ParamsCache, assertDispatch, packParams } from './attention-shared';

export interface AttentionMergeIO {
  /** f32 [B, NH * HS], written. */
  out: GPUBuffer;
  /** f32 [B, NH, numSplits, HS + 2]. */
  partials: GPUBuffer;
}

export interface AttentionMergeDims {
  B: number;
  NH: number;
  HS: number;
  numSplits: number;
}

const WG = 64;

export class AttentionMerge {
  private readonly layout: GPUBindGroupLayout;
  private readonly pipeline: GPUComputePipeline;
  private readonly params: ParamsCache;

  constructor(
    private readonly device: GPUDevice,
    pipelines: PipelineCache,
  ) {
    this.layout = bindGroupLayout(device, 'attention-merge', [
      'storage', // 0 out [B, NH * HS]
      'read-only-storage', // 1 partials [B, NH, numSplits, HS + 2]
      'uniform', // 2 params: NH, HS, numSplits
    ]);
    this.pipeline = pipelines.get({
      label: 'attention-merge',
      code,
      entryPoint: 'main',
      layout: device.createPipelineLayout({ label: 'attention-merge', bindGroupLayouts: [this.layout] }),
      constants: { WG },
    });
    this.params = new ParamsCache(device, 'attention-merge.params');
  }

  /** Records the dispatch into `pass`; never submits. */
  record(pass: GPUComputePassEncoder, io: AttentionMergeIO, dims: AttentionMergeDims): void {
    const { B, NH, HS, numSplits } = dims;
    if (B < 1 || numSplits < 1) throw new Error(`AttentionMerge: bad B ${B} or numSplits ${numSplits}`);
    if (io.partials.size < B * NH * numSplits * (HS + 2) * 4) throw new Error('AttentionMerge: partials buffer too small');
    if (io.out.size < B * NH * HS * 4) throw new Error('AttentionMerge: out buffer too small');
    assertDispatch(this.device, 'attention-merge', NH, B, 1);
    const params = this.params.get(
      packParams([
        ['u32', NH],
        ['u32', HS],
        ['u32', numSplits],
        ['u32', 0],
      ]),
    );
    const bindGroup = this.device.createBindGroup({
      label: 'attention-merge',
      layout: this.layout,
      entries: [io.out, io.partials, params].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    pass.setPipeline(this.pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(NH, B);
  }

  destroy(): void {
    this.params.destroy();
  }
}
