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
import { checkElements, placeholder } from './spec-kernel';
import { QKV_PREP_WG, QkvPrepKernel, type QkvPrepLayerArgs, type QkvPrepShape } from './qkv-prep';

/** The forward's layer inputs and batch (its q/k norm, RoPE table and rows), and the gradient. */
export interface QkvPrepBackwardArgs extends QkvPrepLayerArgs {
  /** f32 [T, (NH + 2 NKV) * HS], read and written in place (q and k columns). */
  dqkv: BufferRef;
  /** f32 [T, (NH + 2 NKV) * HS]: the forward's QKV projection (with bias); read only with q/k norm. */
  qkv?: BufferRef;
}

export class QkvPrepBackward extends QkvPrepKernel {
  constructor(ctx: KernelContext, shape: QkvPrepShape) {
    super(ctx, shape, 'QkvPrepBackward');
  }

  /** One dispatch; record it after the attention backward wrote dq, dk into dqkv. */
  encode(a: QkvPrepBackwardArgs): KernelCall[] {
    const { NH, NKV, HS, qkNorm } = this.shape;
    const label = 'qkv-prep.backward';
    if (qkNorm && (!a.qNorm || !a.kNorm || !a.qkv)) throw new Error(`${label}: the model has q/k norm: qkv, qNorm and kNorm are needed`);
    // maxBlocksPerSeq is unused by the backward entry.
    const uniforms = this.layerUniforms(label, a, 0);
    checkElements(label, 'dqkv', a.dqkv, a.T * (NH + 2 * NKV) * HS);
    if (qkNorm) checkElements(label, 'qkv', a.qkv!, a.T * (NH + 2 * NKV) * HS);
    const call = this.entryCall(
      label,
      'prep_backward',
      {
        dqkv: a.dqkv,
        qkv: a.qkv ?? placeholder(this.ctx),
        qNorm: a.qNorm ?? placeholder(this.ctx),
        kNorm: a.kNorm ?? placeholder(this.ctx),
        ropeTable: a.ropeTable,
        rows: a.rows,
      },
      uniforms,
      Math.ceil((a.T * (NH + NKV)) / QKV_PREP_WG),
    );
    return [call];
  }
}
