/**
 * QkvPrep: the prefill-side preparation of attention inputs. Reads the QKV projection
 * [T, (NH + 2 NKV) * HS] (bias already added by the GEMM epilogue), applies Qwen3 q/k RMSNorm when
 * the model has it, RoPE (HF rotate_half, cos/sin from model/rope.ts's table, over the first
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
import type { DType } from '../model/config';
import { checkDim, checkElements, placeholder, specCall, specLayout, type KernelLayout } from './spec-kernel';
import { ATTENTION_COMMON_WGSL, grid2d } from './attention-shared';
import { BATCH_ROW, KV_BLOCK } from './kv-layout';
import { params, ro, rw, shaderText, type KernelSpec } from './spec';

export interface QkvPrepShape {
  NH: number;
  NKV: number;
  HS: number;
  /** Qwen3 q_norm / k_norm: the dtype their buffers hold (packed in u32) and the norm epsilon. */
  qkNorm: { dtype: DType; eps: number } | null;
  /** Rotated dims of a head (Phi-3 partial rotary), even, <= HS; absent: HS. */
  rotaryDim?: number;
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
  /** f32 [positions, R/2, 2] (model/rope.ts ropeTable): must cover every position of the batch. */
  ropeTable: BufferRef;
  /** false on a layer without RoPE (SmolLM3 no_rope_layers); absent: true. */
  rope?: boolean;
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
  shaders: { main: [ATTENTION_COMMON_WGSL, ropePairs, code] },
};

/** The override constants of a shape (both directions). */
export function qkvPrepConstants(shape: QkvPrepShape): Record<string, number> {
  const { NH, NKV, HS, qkNorm } = shape;
  const ROT = shape.rotaryDim ?? HS;
  if (ROT % 2 !== 0 || ROT < 2 || ROT > HS) throw new Error(`qkv-prep: rotary dims ${ROT} must be even and in 2..${HS}`);
  return { WG: QKV_PREP_WG, HS, ROT, NH, NKV, QK_NORM: qkNorm ? 1 : 0, NORM_DTYPE: DTYPE_CODE[qkNorm?.dtype ?? 'f32'], KV_BLOCK };
}

/** One entry point's layout and pipeline. */
export interface QkvPrepEntry {
  layout: KernelLayout;
  pipeline: GPUComputePipeline;
}

/** The layout and pipeline of one entry point for a shape, which it checks first (`owner` names the wrapper in errors). */
export function qkvPrepEntry(ctx: KernelContext, shape: QkvPrepShape, owner: string, label: string, entryPoint: string): QkvPrepEntry {
  const { NH, NKV, HS } = shape;
  if (HS % 2 !== 0) throw new Error(`${owner}: head dim ${HS} must be even`);
  if (NH % NKV !== 0) throw new Error(`${owner}: ${NH} heads are not a multiple of ${NKV} kv heads`);
  const layout = specLayout(ctx, QKV_PREP_SPEC, entryPoint);
  const code = shaderText(QKV_PREP_SPEC);
  return { layout, pipeline: ctx.pipelines.get({ label, code, entryPoint, layout: layout.pipeline, constants: qkvPrepConstants(shape) }) };
}

export class QkvPrep {
  private readonly q: QkvPrepEntry;
  private readonly kv: QkvPrepEntry;

  constructor(
    private readonly ctx: KernelContext,
    readonly shape: QkvPrepShape,
  ) {
    this.q = qkvPrepEntry(ctx, shape, 'QkvPrep', 'qkv-prep.q', 'prep_q');
    this.kv = qkvPrepEntry(ctx, shape, 'QkvPrep', 'qkv-prep.kv', 'prep_kv');
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
    checkElements(label, 'ropeTable', io.ropeTable, this.shape.rotaryDim ?? HS);
    const uniforms = {
      T: dims.T,
      B: dims.B,
      maxBlocksPerSeq: dims.maxBlocksPerSeq,
      eps: qkNorm?.eps ?? 0,
      rope: io.rope === false ? 0 : 1,
    };
    const { q, k, v, qkv, ropeTable, blockTable, rows } = io;
    const buffers: Record<string, BufferRef> = {
      q,
      k,
      v,
      qkv,
      ropeTable,
      blockTable,
      rows,
      qNorm: io.qNorm ?? placeholder(this.ctx),
      kNorm: io.kNorm ?? placeholder(this.ctx),
    };
    const call = (label: string, e: QkvPrepEntry, workgroups: number) =>
      specCall(this.ctx, QKV_PREP_SPEC, {
        label,
        pipeline: e.pipeline,
        layout: e.layout,
        buffers,
        uniforms,
        workgroups: grid2d(this.ctx, workgroups),
      });
    return [
      call(`${label}.q`, this.q, Math.ceil((dims.T * NH) / QKV_PREP_WG)),
      call(`${label}.kv`, this.kv, Math.ceil((dims.T * 2 * NKV) / QKV_PREP_WG)),
    ];
  }
}
