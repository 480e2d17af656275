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
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, placeholder, specCall } from './spec-kernel';
import { grid2d } from './attention-shared';
import { QKV_PREP_SPEC, QKV_PREP_WG, qkvPrepEntry, type QkvPrepEntry, type QkvPrepShape } from './qkv-prep';

export interface QkvPrepBackwardIO {
  /** f32 [T, (NH + 2 NKV) * HS], read and written in place (q and k columns). */
  dqkv: BufferRef;
  /** f32 [T, (NH + 2 NKV) * HS]: the forward's QKV projection (with bias); read only with q/k norm. */
  qkv?: BufferRef;
  /** Packed [HS] q_norm / k_norm (the forward's); required when the shape has qkNorm. */
  qNorm?: BufferRef;
  kNorm?: BufferRef;
  /** f32 [positions, R/2, 2]: the forward's RoPE table. */
  ropeTable: BufferRef;
  /** false on a NoPE layer (as in the forward); absent: true. */
  rope?: boolean;
  /** array<BatchRow> [B]: the forward's batch rows (positions of the tokens). */
  rows: BufferRef;
}

export interface QkvPrepBackwardDims {
  T: number;
  B: number;
}

export class QkvPrepBackward {
  private readonly entry: QkvPrepEntry;

  constructor(
    private readonly ctx: KernelContext,
    readonly shape: QkvPrepShape,
  ) {
    this.entry = qkvPrepEntry(ctx, shape, 'QkvPrepBackward', 'qkv-prep.backward', 'prep_backward');
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
    checkElements(label, 'ropeTable', io.ropeTable, this.shape.rotaryDim ?? HS);
    return specCall(this.ctx, QKV_PREP_SPEC, {
      label,
      pipeline: this.entry.pipeline,
      layout: this.entry.layout,
      buffers: {
        dqkv: io.dqkv,
        qkv: io.qkv ?? placeholder(this.ctx),
        qNorm: io.qNorm ?? placeholder(this.ctx),
        kNorm: io.kNorm ?? placeholder(this.ctx),
        ropeTable: io.ropeTable,
        rows: io.rows,
      },
      // maxBlocksPerSeq is unused by the backward entry.
      uniforms: { T: dims.T, B: dims.B, maxBlocksPerSeq: 0, eps: qkNorm?.eps ?? 0, rope: io.rope === false ? 0 : 1 },
      workgroups: grid2d(this.ctx, Math.ceil((dims.T * (NH + NKV)) / QKV_PREP_WG)),
    });
  }
}
