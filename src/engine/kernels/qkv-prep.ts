/**
 * QkvPrep: the prefill-side preparation of attention inputs. Reads the QKV projection
 * [T, (NH + 2 NKV) * HS] (bias already added by the GEMM epilogue), applies Qwen3 q/k RMSNorm when
 * the model has it, RoPE (HF rotate_half, cos/sin from model/rope.ts's table), writes q [T, NH, HS]
 * and k, v into the paged cache at each token's (block-table row, position). Several sequences per
 * batch (BatchRow: seq, pos, count; tokens concatenated in row order).
 *
 * Kernel choice: one invocation per (token, head), 64 per workgroup, no shared memory. A head's
 * norm needs all HS values, and the kernel moves T * (NH + 2 NKV) * HS floats once, small next to
 * the GEMM before it, so cooperating threads would only add barriers. Two dispatches (q heads, then
 * k/v heads) keep each at <= 8 storage bindings, the WebGPU default.
 *
 * Not here: the decode-side twin (fused in the dense `qkv` kernel), the QKV GEMM.
 * Reference: reference/attention-paged.ts `qkvPrepForward`.
 */
import code from './qkv-prep.wgsl?raw';
import type { PipelineCache } from '../gpu/pipelines';
import type { DType } from '../model/config';
import { ParamsCache, packParams, withCommon, grid2d } from './attention-shared';

export interface QkvPrepShape {
  NH: number;
  NKV: number;
  HS: number;
  /** Qwen3 q_norm / k_norm: the dtype their buffers hold (packed in u32) and the norm epsilon. */
  qkNorm: { dtype: DType; eps: number } | null;
}

export interface QkvPrepIO {
  /** f32 [T, NH, HS], written. */
  q: GPUBuffer;
  /** This layer's KV cache, f32 [numBlocks, NKV, 16, HS] each, written at the batch's positions. */
  k: GPUBuffer;
  v: GPUBuffer;
  /** f32 [T, (NH + 2 NKV) * HS]: the QKV projection with bias. */
  qkv: GPUBuffer;
  /** Packed [HS]; required when the shape has qkNorm. */
  qNorm?: GPUBuffer;
  kNorm?: GPUBuffer;
  /** f32 [positions, HS/2, 2] (model/rope.ts ropeTable): must cover every position of the batch. */
  ropeTable: GPUBuffer;
  /** u32 [maxSeqs, maxBlocksPerSeq]. */
  blockTable: GPUBuffer;
  /** array<BatchRow> [B]. */
  rows: GPUBuffer;
}

export interface QkvPrepDims {
  /** Tokens in the batch (sum of the rows' counts). */
  T: number;
  /** Batch rows. */
  B: number;
  maxBlocksPerSeq: number;
}

const WG = 64;
const DTYPE_CODE: Record<DType, number> = { f32: 0, f16: 1, bf16: 2 };

type Binding = [number, GPUBufferBindingType];

// q entry: 0 q out, 3 qkv, 4 q_norm, 6 rope table, 8 rows, 9 params.
const Q_BINDINGS: Binding[] = [
  [0, 'storage'],
  [3, 'read-only-storage'],
  [4, 'read-only-storage'],
  [6, 'read-only-storage'],
  [8, 'read-only-storage'],
  [9, 'uniform'],
];
// kv entry: 1 k cache, 2 v cache, 3 qkv, 5 k_norm, 6 rope table, 7 block table, 8 rows, 9 params.
const KV_BINDINGS: Binding[] = [
  [1, 'storage'],
  [2, 'storage'],
  [3, 'read-only-storage'],
  [5, 'read-only-storage'],
  [6, 'read-only-storage'],
  [7, 'read-only-storage'],
  [8, 'read-only-storage'],
  [9, 'uniform'],
];

export class QkvPrep {
  private readonly qLayout: GPUBindGroupLayout;
  private readonly kvLayout: GPUBindGroupLayout;
  private readonly qPipeline: GPUComputePipeline;
  private readonly kvPipeline: GPUComputePipeline;
  private readonly params: ParamsCache;
  private readonly noNorm: GPUBuffer;

  constructor(
    private readonly device: GPUDevice,
    pipelines: PipelineCache,
    readonly shape: QkvPrepShape,
  ) {
    const { NH, NKV, HS } = shape;
    if (HS % 2 !== 0) throw new Error(`QkvPrep: head dim ${HS} must be even`);
    if (NH % NKV !== 0) throw new Error(`QkvPrep: ${NH} heads are not a multiple of ${NKV} kv heads`);
    const layout = (label: string, bindings: Binding[]) =>
      device.createBindGroupLayout({
        label,
        entries: bindings.map(([binding, type]) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
      });
    this.qLayout = layout('qkv-prep.q', Q_BINDINGS);
    this.kvLayout = layout('qkv-prep.kv', KV_BINDINGS);
    const constants = {
      WG,
      HS,
      NH,
      NKV,
      QK_NORM: shape.qkNorm ? 1 : 0,
      NORM_DTYPE: DTYPE_CODE[shape.qkNorm?.dtype ?? 'f32'],
    };
    const full = withCommon(code);
    this.qPipeline = pipelines.get({
      label: 'qkv-prep.q',
      code: full,
      entryPoint: 'prep_q',
      layout: device.createPipelineLayout({ label: 'qkv-prep.q', bindGroupLayouts: [this.qLayout] }),
      constants,
    });
    this.kvPipeline = pipelines.get({
      label: 'qkv-prep.kv',
      code: full,
      entryPoint: 'prep_kv',
      layout: device.createPipelineLayout({ label: 'qkv-prep.kv', bindGroupLayouts: [this.kvLayout] }),
      constants,
    });
    this.params = new ParamsCache(device, 'qkv-prep.params');
    this.noNorm = device.createBuffer({ label: 'qkv-prep.noNorm', size: 16, usage: GPUBufferUsage.STORAGE });
  }

  /** Records both dispatches into `pass`; never submits. */
  record(pass: GPUComputePassEncoder, io: QkvPrepIO, dims: QkvPrepDims): void {
    const { NH, NKV, HS, qkNorm } = this.shape;
    if (dims.B < 1 || dims.T < 1) throw new Error(`QkvPrep: empty batch (B ${dims.B}, T ${dims.T})`);
    if (qkNorm && (!io.qNorm || !io.kNorm)) throw new Error('QkvPrep: the model has q/k norm but no qNorm/kNorm buffers were given');
    const need = dims.T * (NH + 2 * NKV) * HS * 4;
    if (io.qkv.size < need) throw new Error(`QkvPrep: qkv buffer has ${io.qkv.size} bytes, needs ${need}`);
    if (io.q.size < dims.T * NH * HS * 4) throw new Error(`QkvPrep: q buffer too small for T=${dims.T}`);
    if (io.rows.size < dims.B * 16) throw new Error(`QkvPrep: rows buffer holds fewer than ${dims.B} rows`);
    if (io.ropeTable.size < HS * 4) throw new Error('QkvPrep: the RoPE table holds no position');

    const params = this.params.get(
      packParams([
        ['u32', dims.T],
        ['u32', dims.B],
        ['u32', dims.maxBlocksPerSeq],
        ['f32', qkNorm?.eps ?? 0],
      ]),
    );
    const buffers: Record<number, GPUBuffer> = {
      0: io.q,
      1: io.k,
      2: io.v,
      3: io.qkv,
      4: io.qNorm ?? this.noNorm,
      5: io.kNorm ?? this.noNorm,
      6: io.ropeTable,
      7: io.blockTable,
      8: io.rows,
      9: params,
    };
    const group = (label: string, layout: GPUBindGroupLayout, bindings: Binding[]) =>
      this.device.createBindGroup({
        label,
        layout,
        entries: bindings.map(([binding]) => ({ binding, resource: { buffer: buffers[binding] } })),
      });

    pass.setPipeline(this.qPipeline);
    pass.setBindGroup(0, group('qkv-prep.q', this.qLayout, Q_BINDINGS));
    pass.dispatchWorkgroups(...grid2d(this.device, Math.ceil((dims.T * NH) / WG)));
    pass.setPipeline(this.kvPipeline);
    pass.setBindGroup(0, group('qkv-prep.kv', this.kvLayout, KV_BINDINGS));
    pass.dispatchWorkgroups(...grid2d(this.device, Math.ceil((dims.T * 2 * NKV) / WG)));
  }

  destroy(): void {
    this.params.destroy();
    this.noNorm.destroy();
  }
}
