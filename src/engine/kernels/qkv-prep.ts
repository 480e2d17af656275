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
 * Not here: the decode-side twin (fused in the dense `qkv` kernel, decode-qkv.ts), the QKV GEMM.
 * Reference: reference/attention-paged.ts `qkvPrepForward`.
 */
import code from './qkv-prep.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import { KernelCall, packUniforms, type BufferRef } from '../gpu/kernel-call';
import type { DType } from '../model/config';
import { checkDim, checkElements, placeholder } from './common';
import { grid2d, withCommon } from './attention-shared';

export interface QkvPrepShape {
  NH: number;
  NKV: number;
  HS: number;
  /** Qwen3 q_norm / k_norm: the dtype their buffers hold (packed in u32) and the norm epsilon. */
  qkNorm: { dtype: DType; eps: number } | null;
}

export interface QkvPrepIO {
  /** f32 [T, NH, HS], written. */
  q: BufferRef;
  /** This layer's KV cache, f32 [numBlocks, NKV, 16, HS] each, written at the batch's positions. */
  k: BufferRef;
  v: BufferRef;
  /** f32 [T, (NH + 2 NKV) * HS]: the QKV projection with bias. */
  qkv: BufferRef;
  /** Packed [HS]; required when the shape has qkNorm. */
  qNorm?: BufferRef;
  kNorm?: BufferRef;
  /** f32 [positions, HS/2, 2] (model/rope.ts ropeTable): must cover every position of the batch. */
  ropeTable: BufferRef;
  /** u32 [maxSeqs, maxBlocksPerSeq]. */
  blockTable: BufferRef;
  /** array<BatchRow> [B]. */
  rows: BufferRef;
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

type IoName = keyof QkvPrepIO | 'params';
type Binding = [number, GPUBufferBindingType, IoName];

// Binding numbers of qkv-prep.wgsl; each entry point's layout lists the ones it reads.
const Q_BINDINGS: Binding[] = [
  [0, 'storage', 'q'], // q out [T, NH, HS]
  [3, 'read-only-storage', 'qkv'], // [T, (NH + 2 NKV) * HS]
  [4, 'read-only-storage', 'qNorm'], // [HS] packed
  [6, 'read-only-storage', 'ropeTable'], // [positions, HS/2] (cos, sin)
  [8, 'read-only-storage', 'rows'], // [B] BatchRow
  [9, 'uniform', 'params'], // T, B, maxBlocksPerSeq, eps
];
const KV_BINDINGS: Binding[] = [
  [1, 'storage', 'k'], // k cache (this layer)
  [2, 'storage', 'v'], // v cache (this layer)
  [3, 'read-only-storage', 'qkv'],
  [5, 'read-only-storage', 'kNorm'], // [HS] packed
  [6, 'read-only-storage', 'ropeTable'],
  [7, 'read-only-storage', 'blockTable'], // [maxSeqs, maxBlocksPerSeq]
  [8, 'read-only-storage', 'rows'],
  [9, 'uniform', 'params'],
];

interface Entry {
  bindings: Binding[];
  layout: GPUBindGroupLayout;
  pipeline: GPUComputePipeline;
}

export class QkvPrep {
  private readonly q: Entry;
  private readonly kv: Entry;

  constructor(
    private readonly ctx: KernelContext,
    readonly shape: QkvPrepShape,
  ) {
    const { NH, NKV, HS } = shape;
    if (HS % 2 !== 0) throw new Error(`QkvPrep: head dim ${HS} must be even`);
    if (NH % NKV !== 0) throw new Error(`QkvPrep: ${NH} heads are not a multiple of ${NKV} kv heads`);
    const constants = { WG, HS, NH, NKV, QK_NORM: shape.qkNorm ? 1 : 0, NORM_DTYPE: DTYPE_CODE[shape.qkNorm?.dtype ?? 'f32'] };
    const full = withCommon(code);
    const entry = (name: string, entryPoint: string, bindings: Binding[]): Entry => {
      const layout = ctx.device.createBindGroupLayout({
        label: name,
        entries: bindings.map(([binding, type]) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
      });
      const pipeline = ctx.pipelines.get({
        label: name,
        code: full,
        entryPoint,
        layout: ctx.device.createPipelineLayout({ label: name, bindGroupLayouts: [layout] }),
        constants,
      });
      return { bindings, layout, pipeline };
    };
    this.q = entry('qkv-prep.q', 'prep_q', Q_BINDINGS);
    this.kv = entry('qkv-prep.kv', 'prep_kv', KV_BINDINGS);
  }

  /** The two dispatches (q heads, then k/v heads), to record in this order. */
  encode(io: QkvPrepIO, dims: QkvPrepDims): KernelCall[] {
    const { NH, NKV, HS, qkNorm } = this.shape;
    const label = 'qkv-prep';
    checkDim(label, 'T', dims.T);
    checkDim(label, 'B', dims.B);
    checkDim(label, 'maxBlocksPerSeq', dims.maxBlocksPerSeq);
    if (qkNorm && (!io.qNorm || !io.kNorm)) throw new Error('qkv-prep: the model has q/k norm but no qNorm/kNorm buffers were given');
    checkElements(label, 'qkv', io.qkv, dims.T * (NH + 2 * NKV) * HS);
    checkElements(label, 'q', io.q, dims.T * NH * HS);
    checkElements(label, 'rows', io.rows, dims.B * 4);
    checkElements(label, 'ropeTable', io.ropeTable, HS);
    const uniforms = packUniforms([dims.T, dims.B, dims.maxBlocksPerSeq, { f32: qkNorm?.eps ?? 0 }]);
    const refs: Record<string, BufferRef> = {
      ...io,
      qNorm: io.qNorm ?? placeholder(this.ctx),
      kNorm: io.kNorm ?? placeholder(this.ctx),
    };
    return [
      this.call(`${label}.q`, this.q, refs, uniforms, Math.ceil((dims.T * NH) / WG)),
      this.call(`${label}.kv`, this.kv, refs, uniforms, Math.ceil((dims.T * 2 * NKV) / WG)),
    ];
  }

  private call(label: string, e: Entry, refs: Record<string, BufferRef>, uniforms: ArrayBuffer, workgroups: number): KernelCall {
    const params = this.ctx.device.createBuffer({ label: `${label}.uniforms`, size: uniforms.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.ctx.device.queue.writeBuffer(params, 0, uniforms);
    const bindGroup = this.ctx.device.createBindGroup({
      label,
      layout: e.layout,
      entries: e.bindings.map(([binding, , name]) => {
        const ref = name === 'params' ? params : refs[name];
        return { binding, resource: ref instanceof GPUBuffer ? { buffer: ref } : ref };
      }),
    });
    return new KernelCall(label, e.pipeline, bindGroup, grid2d(this.ctx, workgroups), params);
  }
}
