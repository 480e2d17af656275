/**
 * QkvPrep: the prefill-side preparation of attention inputs. Reads the QKV projection
 * [T, (NH + 2 NKV) * HS] (bias already added by the GEMM epilogue), applies Qwen3 q/k RMSNorm when
 * the model has it, RoPE (HF rotate_half, cos/sin from model/config/rope.ts's table, over the first
 * `rotaryDim` dims of a head, none on a NoPE layer), writes q [T, NH, HS]
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
import ropePairs from './rope-pairs.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { DType } from '../tensor/dtype';
import { checkDim, checkElements, placeholder, SpecKernel } from './spec-kernel';
import { ATTENTION_COMMON_WGSL, BATCH_ROW_SCAN_WGSL, grid2d } from './attention-shared';
import { BATCH_ROW, KV_BLOCK } from './kv-layout';
import { params, ro, rw, type KernelSpec, type UniformValues } from './spec';

export interface QkvPrepShape {
  NH: number;
  NKV: number;
  HS: number;
  /** Qwen3 q_norm / k_norm: the dtype their buffers hold (packed in u32) and the norm epsilon. */
  qkNorm: { dtype: DType; eps: number } | null;
  /** Rotated dims of a head (Phi-3 partial rotary), even, <= HS; absent: HS. */
  rotaryDim?: number;
}

/** A layer's q/k norm and RoPE inputs and a batch's rows: what the forward and its backward both take. */
export interface QkvPrepLayerArgs {
  /** Packed [HS]; required when the shape has qkNorm. */
  qNorm?: BufferRef;
  kNorm?: BufferRef;
  /** f32 [positions, R/2, 2] (model/config/rope.ts ropeTable): must cover every position of the batch. */
  ropeTable: BufferRef;
  /** false on a layer without RoPE (SmolLM3 no_rope_layers); absent: true. */
  rope?: boolean;
  /** array<BatchRow> [B]: the positions of the batch's tokens. */
  rows: BufferRef;
  /** Tokens in the batch (sum of the rows' counts). */
  T: number;
  /** Batch rows. */
  B: number;
}

export interface QkvPrepArgs extends QkvPrepLayerArgs {
  /** f32 [T, NH, HS], written. */
  q: BufferRef;
  /** This layer's KV cache, f32 [numBlocks, NKV, 16, HS] each, written at the batch's positions. */
  k: BufferRef;
  v: BufferRef;
  /** f32 [T, (NH + 2 NKV) * HS]: the QKV projection with bias. */
  qkv: BufferRef;
  /** u32 [maxSeqs, maxBlocksPerSeq]. */
  blockTable: BufferRef;
  maxBlocksPerSeq: number;
}

/** Invocations per workgroup (one per token and head). */
export const QKV_PREP_WG = 64;

// Norm weights are plain floats (WeightSet decodes every 1-D tensor, block types included, to f32).
const DTYPE_CODE: Readonly<Record<string, number>> = { f32: 0, f16: 1, bf16: 2 };

/** One interface for the three entry points (prep_q, prep_kv, prep_backward); each layout lists what its entry reads. */
export const QKV_PREP_SPEC: KernelSpec = {
  name: 'qkv-prep',
  bindings: {
    q: rw('qOut', 'f32', '[T, NH, HS] (q entry)'),
    k: rw('kCache', 'f32', '[numBlocks, NKV, 16, HS] (kv entry)'),
    v: rw('vCache', 'f32', '[numBlocks, NKV, 16, HS] (kv entry)'),
    qkv: ro('qkv', 'f32', '[T, (NH + 2 NKV) * HS]'),
    qNorm: ro('qNorm', 'u32', '[HS] packed (q and backward entries)'),
    kNorm: ro('kNorm', 'u32', '[HS] packed (kv and backward entries)'),
    ropeTable: ro('ropeTable', 'vec2<f32>', '[positions, R/2] (cos, sin)'),
    blockTable: ro('blockTable', 'u32', '[maxSeqs, maxBlocksPerSeq] (kv entry)'),
    rows: ro('rows', BATCH_ROW, '[B]'),
    dqkv: rw('dqkv', 'f32', '[T, (NH + 2 NKV) * HS] (backward entry)'),
  },
  // rope: 1 to rotate the first ROT dims of q and k heads, 0 on a NoPE layer.
  uniforms: params('T B maxBlocksPerSeq eps:f32 rope', { var: 'params' }),
  entryPoints: {
    prep_q: ['q', 'qkv', 'qNorm', 'ropeTable', 'rows'],
    prep_kv: ['k', 'v', 'qkv', 'kNorm', 'ropeTable', 'blockTable', 'rows'],
    prep_backward: ['qkv', 'qNorm', 'kNorm', 'ropeTable', 'rows', 'dqkv'],
  },
  shaders: { main: [ATTENTION_COMMON_WGSL, BATCH_ROW_SCAN_WGSL, ropePairs, code] },
};

/** The override constants of a shape (both directions). */
export function qkvPrepConstants(shape: QkvPrepShape): Record<string, number> {
  const { NH, NKV, HS, qkNorm } = shape;
  const ROT = shape.rotaryDim ?? HS;
  if (ROT % 2 !== 0 || ROT < 2 || ROT > HS) throw new Error(`qkv-prep: rotary dims ${ROT} must be even and in 2..${HS}`);
  return { WG: QKV_PREP_WG, HS, ROT, NH, NKV, QK_NORM: qkNorm ? 1 : 0, NORM_DTYPE: DTYPE_CODE[qkNorm?.dtype ?? 'f32'], KV_BLOCK };
}

/** One entry point's layout and pipeline. */
/**
 * The base of qkv-prep's two wrappers (QkvPrep, QkvPrepBackward): the spec, its entry points' layouts
 * and the shape's overrides; each entry point's pipeline is composed on first use.
 */
export abstract class QkvPrepKernel extends SpecKernel {
  private readonly overrides: Record<string, number>;

  protected constructor(
    ctx: KernelContext,
    readonly shape: QkvPrepShape,
    owner: string,
  ) {
    super(ctx, QKV_PREP_SPEC);
    const { NH, NKV, HS } = shape;
    if (HS % 2 !== 0) throw new Error(`${owner}: head dim ${HS} must be even`);
    if (NH % NKV !== 0) throw new Error(`${owner}: ${NH} heads are not a multiple of ${NKV} kv heads`);
    this.overrides = qkvPrepConstants(shape);
  }

  /** Checks what both wrappers take and returns the uniform block (maxBlocksPerSeq: 0 where unused). */
  protected layerUniforms(label: string, a: QkvPrepLayerArgs, maxBlocksPerSeq: number): UniformValues {
    checkDim(label, 'T', a.T);
    checkDim(label, 'B', a.B);
    checkElements(label, 'rows', a.rows, a.B * 4);
    checkElements(label, 'ropeTable', a.ropeTable, this.shape.rotaryDim ?? this.shape.HS);
    return { T: a.T, B: a.B, maxBlocksPerSeq, eps: this.shape.qkNorm?.eps ?? 0, rope: a.rope === false ? 0 : 1 };
  }

  /** One entry point's call over the family's buffers by name (each entry binds only its own). */
  protected entryCall(
    label: string,
    entryPoint: string,
    buffers: Record<string, BufferRef>,
    uniforms: UniformValues,
    workgroups: number,
  ): KernelCall {
    return this.call({
      label,
      entryPoint,
      pipeline: this.pipeline({ label, entryPoint, overrides: this.overrides }),
      buffers,
      uniforms,
      workgroups: grid2d(this.ctx, workgroups),
    });
  }
}

export class QkvPrep extends QkvPrepKernel {
  constructor(ctx: KernelContext, shape: QkvPrepShape) {
    super(ctx, shape, 'QkvPrep');
  }

  /** The two dispatches (q heads, then k/v heads), to record in this order. */
  encode(a: QkvPrepArgs): KernelCall[] {
    const { NH, NKV, HS, qkNorm } = this.shape;
    const label = 'qkv-prep';
    checkDim(label, 'maxBlocksPerSeq', a.maxBlocksPerSeq);
    if (qkNorm && (!a.qNorm || !a.kNorm)) throw new Error('qkv-prep: the model has q/k norm but no qNorm/kNorm buffers were given');
    const uniforms = this.layerUniforms(label, a, a.maxBlocksPerSeq);
    checkElements(label, 'qkv', a.qkv, a.T * (NH + 2 * NKV) * HS);
    checkElements(label, 'q', a.q, a.T * NH * HS);
    const { q, k, v, qkv, ropeTable, blockTable, rows } = a;
    const buffers: Record<string, BufferRef> = {
      q,
      k,
      v,
      qkv,
      ropeTable,
      blockTable,
      rows,
      qNorm: a.qNorm ?? placeholder(this.ctx),
      kNorm: a.kNorm ?? placeholder(this.ctx),
    };
    return [
      this.entryCall(`${label}.q`, 'prep_q', buffers, uniforms, Math.ceil((a.T * NH) / QKV_PREP_WG)),
      this.entryCall(`${label}.kv`, 'prep_kv', buffers, uniforms, Math.ceil((a.T * 2 * NKV) / QKV_PREP_WG)),
    ];
  }
}
