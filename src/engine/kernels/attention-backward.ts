/**
 * AttentionBackward: the backward of PrefillAttention for the trainer, FlashAttention-2 style
 * (attention-backward.wgsl; the naive attention-backward-naive.wgsl is its readable definition and
 * GPU oracle; the math is in attention-backward-common.wgsl). Three dispatches per layer:
 *   delta  D = rowsum(dO * O) per (token, head), into the second half of `stats`
 *   dq     per query tile: P recomputed from q, K and the saved lse, dq = scale sum_j P (dP - D) k_j
 *   dkv    per key tile: dv = sum_i P dO_i, dk = scale sum_i P (dP - D) q_i over the later queries
 *          of all G heads of the kv head (GQA's sum over the group, in a fixed order)
 * No T x T matrix is stored and no float atomics are used; each output has one writer, so results
 * are deterministic. The two passes read K/V from the paged cache the forward attended to, with the
 * forward's batch rows and block table.
 *
 * Outputs go into the layout of the QKV projection, dqkv [T, (NH + 2 NKV) * HS] (dq in the q
 * columns, dk and dv in the k and v columns, overwritten): QkvPrepBackward then works on it in place
 * and one GEMM takes it through the fused qkv weight.
 *
 * A sliding window (`dims.window`, the forward's) masks P like the forward and skips key tiles
 * before a query tile's window and query tiles a window past a key tile.
 *
 * Scope: gradients reach keys of the batch's own tokens. A row with a cached prefix (pos > 0) gets
 * the prefix keys' contribution to dq, but the prefix keys themselves get no dk, dv (they have no
 * column in dqkv): the trainer runs whole sequences from position 0.
 *
 * Tiling (`attentionBackwardTiling`): LANES threads per query row / key, the smallest divisor of
 * HS / 4 that leaves each at most 4 vec4s (16 floats) per tensor held in registers (HS 64 -> 4
 * lanes, 128 -> 8, 48 -> 3, 16 -> 1): the dk/dv pass holds k, v, dk and dv, 64 floats. 64 threads.
 * Keys per dq tile (BK) and query rows per dk/dv tile (BQ): the largest of 16/8/4/2/1 whose staged
 * tiles and lane partials fit the workgroup memory (16 KiB: HS 64 -> 8 and 8; 32 KiB: 16 and 16),
 * at most 4 on software adapters (compile time; `maxTile`).
 * Reference: reference/attention.ts `attentionBackward`.
 */
import commonWgsl from './attention-backward-common.wgsl?raw';
import naiveCode from './attention-backward-naive.wgsl?raw';
import tiledCode from './attention-backward.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { AttentionShape } from './attention-decode';
import type { PrefillTiling } from './attention-prefill';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import {
  ATTENTION_COMMON_WGSL,
  BATCH_ROW_SCAN_WGSL,
  checkTiledHeads,
  grid2d,
  KV_TILE_WGSL,
  kvBindings,
  rowLanes,
  workgroupStorageBudget,
  type PrefillBatchArgs,
} from './attention-shared';
import { KV_BLOCK } from './kv-layout';
import type { ShaderConst } from './shader';
import { params, ro, rw, type KernelSpec, type UniformValues } from './spec';

export interface AttentionBackwardOptions {
  variant?: 'tiled' | 'naive';
  /** Workgroup bytes to plan for (default: the device limit); tests force 16 KiB, the WebGPU default. */
  workgroupStorageBytes?: number;
  /**
   * Largest key / query tile (16, 8, 4, 2 or 1). Default 16; 4 on software adapters, where a
   * pipeline's compile time grows with the unrolled tile (SwiftShader: ~35 s for the two 16-tile
   * pipelines at HS 64, ~6 s at 4).
   */
  maxTile?: number;
}

/** The forward's buffers and batch (its KV cache as the forward left it), and the gradients. */
export interface AttentionBackwardArgs extends PrefillBatchArgs {
  /** f32 [T, (NH + 2 NKV) * HS], written: dq, dk, dv in the q, k, v columns of each token row. */
  dqkv: BufferRef;
  /**
   * f32 [2, T, NH]: the first T * NH values are the forward's lse (bind this buffer's start as
   * PrefillAttention's `lse` output); the second T * NH are scratch that the first dispatch fills with D.
   */
  stats: BufferRef;
  /** f32 [T, NH * HS]: gradient of the attention output. */
  dout: BufferRef;
  /** f32 [T, NH * HS]: the forward's attention output. */
  out: BufferRef;
  /** f32 [T, NH, HS]: q after RoPE, as the forward read it. */
  q: BufferRef;
}

/**
 * The forward's tiling fields (rowsPerTile: query rows per dq workgroup, and keys per dk/dv
 * workgroup; keysPerTile: keys per staged tile of the dq pass), and the dk/dv pass's query tile.
 */
export interface AttentionBackwardTiling extends PrefillTiling {
  /** Query rows per staged tile of the dk/dv pass. */
  queriesPerTile: number;
}

const MAX_DPT4 = 4;

export function attentionBackwardTiling(HS: number, budgetBytes: number, maxTile = 16): AttentionBackwardTiling {
  const { lanes, workgroupSize } = rowLanes(HS, MAX_DPT4);
  const part = (n: number) => 8 * (lanes > 1 ? n * workgroupSize : 1);
  const fits = (bytes: number) => bytes + 16 <= budgetBytes;
  const sizes = [16, 8, 4, 2, 1].filter((n) => n <= maxTile);
  const keysPerTile = sizes.find((bk) => fits(4 * 2 * bk * HS + part(bk)));
  const queriesPerTile = sizes.find((bq) => fits(4 * 2 * bq * HS + 12 * bq + part(bq)));
  if (!keysPerTile || !queriesPerTile)
    throw new Error(`AttentionBackward: head dim ${HS} does not fit ${budgetBytes} bytes of workgroup memory`);
  return { workgroupSize, lanes, rowsPerTile: workgroupSize / lanes, keysPerTile, queriesPerTile };
}

const BACKWARD_BINDINGS = {
  dqkv: rw('dqkv', 'vec4<f32>', '[T, (NH + 2 NKV) * HS] (dq, dk, dv entries)'),
  stats: rw('stats', 'f32', "[2, T, NH]: lse (the forward's), D (written by `delta`)"),
  dout: ro('dout', 'vec4<f32>', '[T, NH * HS]'),
  out: ro('o_fwd', 'vec4<f32>', "[T, NH * HS] the forward's output (delta entry)"),
  q: ro('q', 'vec4<f32>', '[T, NH, HS] after RoPE'),
  ...kvBindings('vec4<f32>'),
};
const GRADS = ['dqkv', 'stats', 'dout', 'q', 'k', 'v', 'blockTable', 'rows'] as const;

/** Both variants declare the same interface; each entry point's layout lists what it reads. */
export const ATTENTION_BACKWARD_SPEC: KernelSpec<keyof typeof BACKWARD_BINDINGS> = {
  name: 'attention-backward',
  bindings: BACKWARD_BINDINGS,
  uniforms: params('B T maxBlocksPerSeq scale:f32 window', { var: 'params' }),
  entryPoints: { delta: ['stats', 'dout', 'out'], dq: GRADS, dkv: GRADS },
  shaders: {
    tiled: [ATTENTION_COMMON_WGSL, BATCH_ROW_SCAN_WGSL, commonWgsl, KV_TILE_WGSL, tiledCode],
    naive: [ATTENTION_COMMON_WGSL, BATCH_ROW_SCAN_WGSL, commonWgsl, naiveCode],
  },
};

type BackwardEntry = 'delta' | 'dq' | 'dkv';

export class AttentionBackward extends SpecKernel {
  readonly variant: 'tiled' | 'naive';
  readonly tiling: AttentionBackwardTiling;
  private readonly consts: Record<string, ShaderConst>;

  constructor(
    ctx: KernelContext,
    readonly shape: AttentionShape,
    opts: AttentionBackwardOptions = {},
  ) {
    super(ctx, ATTENTION_BACKWARD_SPEC);
    const { NH, NKV, HS } = shape;
    checkTiledHeads('AttentionBackward', NH, NKV, HS);
    this.variant = opts.variant ?? 'tiled';
    this.tiling = attentionBackwardTiling(
      HS,
      workgroupStorageBudget(ctx, opts.workgroupStorageBytes),
      opts.maxTile ?? (ctx.softwareAdapter ? 4 : 16),
    );
    const { workgroupSize: WG, lanes, keysPerTile: BK, queriesPerTile: BQ } = this.tiling;
    const base = { HS, NKV, G: NH / NKV };
    this.consts =
      this.variant === 'tiled'
        ? {
            ...base,
            WG,
            LANES: lanes,
            DPT4: HS / 4 / lanes,
            BK,
            BQ,
            PART_K: lanes > 1 ? BK * WG : 1,
            PART_Q: lanes > 1 ? BQ * WG : 1,
          }
        : base;
  }

  /** The three dispatches (delta, dq, dk/dv), to record in this order after the forward's. */
  encode(a: AttentionBackwardArgs): KernelCall[] {
    const { NH, NKV, HS } = this.shape;
    const { B, T, maxCount, maxBlocksPerSeq, window = 0 } = a;
    const label = `attention-backward.${this.variant}`;
    for (const [name, v] of Object.entries({ B, T, maxCount, maxBlocksPerSeq })) checkDim(label, name, v);
    checkDim(label, 'window', window, 0);
    if (maxCount > T) throw new Error(`${label}: the longest row (${maxCount}) exceeds the batch's ${T} tokens`);
    checkElements(label, 'dqkv', a.dqkv, T * (NH + 2 * NKV) * HS);
    checkElements(label, 'stats', a.stats, 2 * T * NH);
    checkElements(label, 'dout', a.dout, T * NH * HS);
    checkElements(label, 'out', a.out, T * NH * HS);
    checkElements(label, 'q', a.q, T * NH * HS);
    checkElements(label, 'rows', a.rows, B * 4);
    const uniforms = { B, T, maxBlocksPerSeq, scale: 1 / Math.sqrt(HS), window };
    const G = NH / NKV;
    const R = this.tiling.rowsPerTile;
    const tiled = this.variant === 'tiled';
    return [
      this.entryCall('delta', a, uniforms, grid2d(this.ctx, Math.ceil((T * NH) / 64))),
      this.entryCall('dq', a, uniforms, tiled ? [Math.ceil((maxCount * G) / R), NKV, B] : grid2d(this.ctx, Math.ceil((T * NH) / 64))),
      this.entryCall('dkv', a, uniforms, tiled ? [Math.ceil(maxCount / R), NKV, B] : grid2d(this.ctx, Math.ceil((T * NKV) / 64))),
    ];
  }

  private entryCall(
    entryPoint: BackwardEntry,
    a: AttentionBackwardArgs,
    uniforms: UniformValues,
    workgroups: [number, number, number],
  ): KernelCall {
    const label = `attention-backward.${this.variant}.${entryPoint}`;
    const { dqkv, stats, dout, out, q, k, v, blockTable, rows } = a;
    return this.call({
      label,
      entryPoint,
      pipeline: this.pipeline({ label, entryPoint, variant: this.variant, consts: this.consts, overrides: { KV_BLOCK } }),
      buffers: { dqkv, stats, dout, out, q, k, v, blockTable, rows },
      uniforms,
      workgroups,
    });
  }
}
