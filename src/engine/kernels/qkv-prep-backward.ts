/**
 * QkvPrepBackward: the backward of QkvPrep for the trainer (entry point `prep_backward` of
 * qkv-prep.wgsl, beside the forward's). In place on the gradient of the QKV projection
 * dqkv [T, (NH + 2 NKV) * HS]: the attention backward leaves the gradients w.r.t. q and k after
 * RoPE in their columns; this dispatch undoes RoPE (rotation by -theta) and, for Qwen3, the per-head
 * q/k RMSNorm (from the saved projection, its rstd recomputed: HS values per head), so that
 * dX = dqkv W_qkv is then one GEMM through the fused weight. v columns are untouched.
 *
 * One invocation per (token, q or k head), like the forward: the work is a few reads per element
 * next to the GEMM that follows. Positions come from the batch rows exactly as in the forward.
 * Reference: reference/qkv-prep-backward.ts `qkvPrepBackward`.
 */
import code from './qkv-prep.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import { KernelCall, packUniforms, type BufferRef } from '../gpu/kernel-call';
import type { DType } from '../model/config';
import { checkDim, checkElements, placeholder } from './common';
import { grid2d, withCommon } from './attention-shared';
import type { QkvPrepShape } from './qkv-prep';

export interface QkvPrepBackwardIO {
  /** f32 [T, (NH + 2 NKV) * HS], read and written in place (q and k columns). */
  dqkv: BufferRef;
  /** f32 [T, (NH + 2 NKV) * HS]: the forward's QKV projection (with bias); read only with q/k norm. */
  qkv?: BufferRef;
  /** Packed [HS] q_norm / k_norm (the forward's); required when the shape has qkNorm. */
  qNorm?: BufferRef;
  kNorm?: BufferRef;
  /** f32 [positions, HS/2, 2]: the forward's RoPE table. */
  ropeTable: BufferRef;
  /** array<BatchRow> [B]: the forward's batch rows (positions of the tokens). */
  rows: BufferRef;
}

export interface QkvPrepBackwardDims {
  T: number;
  B: number;
}

const WG = 64;
const DTYPE_CODE: Record<DType, number> = { f32: 0, f16: 1, bf16: 2 };

// Binding numbers of qkv-prep.wgsl that `prep_backward` uses.
const BINDINGS: Array<[number, GPUBufferBindingType, keyof QkvPrepBackwardIO | 'params']> = [
  [3, 'read-only-storage', 'qkv'], // saved projection [T, (NH + 2 NKV) * HS]
  [4, 'read-only-storage', 'qNorm'], // [HS] packed
  [5, 'read-only-storage', 'kNorm'], // [HS] packed
  [6, 'read-only-storage', 'ropeTable'], // [positions, HS/2] (cos, sin)
  [8, 'read-only-storage', 'rows'], // [B] BatchRow
  [9, 'uniform', 'params'], // T, B, maxBlocksPerSeq (unused), eps
  [10, 'storage', 'dqkv'], // gradient of the projection, in place
];

export class QkvPrepBackward {
  private readonly layout: GPUBindGroupLayout;
  private readonly pipeline: GPUComputePipeline;

  constructor(
    private readonly ctx: KernelContext,
    readonly shape: QkvPrepShape,
  ) {
    const { NH, NKV, HS } = shape;
    if (HS % 2 !== 0) throw new Error(`QkvPrepBackward: head dim ${HS} must be even`);
    if (NH % NKV !== 0) throw new Error(`QkvPrepBackward: ${NH} heads are not a multiple of ${NKV} kv heads`);
    const label = 'qkv-prep.backward';
    this.layout = ctx.device.createBindGroupLayout({
      label,
      entries: BINDINGS.map(([binding, type]) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
    });
    this.pipeline = ctx.pipelines.get({
      label,
      code: withCommon(code),
      entryPoint: 'prep_backward',
      layout: ctx.device.createPipelineLayout({ label, bindGroupLayouts: [this.layout] }),
      constants: { WG, HS, NH, NKV, QK_NORM: shape.qkNorm ? 1 : 0, NORM_DTYPE: DTYPE_CODE[shape.qkNorm?.dtype ?? 'f32'] },
    });
  }

  /** One dispatch; record it after the attention backward wrote dq, dk into dqkv. */
  encode(io: QkvPrepBackwardIO, dims: QkvPrepBackwardDims): KernelCall {
    const { NH, NKV, HS, qkNorm } = this.shape;
    const label = 'qkv-prep.backward';
    checkDim(label, 'T', dims.T);
    checkDim(label, 'B', dims.B);
    if (qkNorm && (!io.qNorm || !io.kNorm || !io.qkv)) throw new Error(`${label}: the model has q/k norm: qkv, qNorm and kNorm are needed`);
    checkElements(label, 'dqkv', io.dqkv, dims.T * (NH + 2 * NKV) * HS);
    if (qkNorm) checkElements(label, 'qkv', io.qkv!, dims.T * (NH + 2 * NKV) * HS);
    checkElements(label, 'rows', io.rows, dims.B * 4);
    checkElements(label, 'ropeTable', io.ropeTable, HS);
    const uniforms = packUniforms([dims.T, dims.B, 0, { f32: qkNorm?.eps ?? 0 }]);
    const params = this.ctx.device.createBuffer({ label: `${label}.uniforms`, size: uniforms.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.ctx.device.queue.writeBuffer(params, 0, uniforms);
    const refs: Record<string, BufferRef> = {
      ...io,
      qkv: io.qkv ?? placeholder(this.ctx),
      qNorm: io.qNorm ?? placeholder(this.ctx),
      kNorm: io.kNorm ?? placeholder(this.ctx),
      params,
    };
    const bindGroup = this.ctx.device.createBindGroup({
      label,
      layout: this.layout,
      entries: BINDINGS.map(([binding, , name]) => {
        const ref = refs[name];
        return { binding, resource: ref instanceof GPUBuffer ? { buffer: ref } : ref };
      }),
    });
    return new KernelCall(label, this.pipeline, bindGroup, grid2d(this.ctx, Math.ceil((dims.T * (NH + NKV)) / WG)), params);
  }
}
