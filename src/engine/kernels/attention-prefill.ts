/**
 * PrefillAttention: causal GQA attention of a prefill batch over the paged KV cache, written after
 * QkvPrep has put the batch's k, v into the cache. Rows of several sequences, each with its own
 * first position (a cached prefix is reused, not recomputed): query i of a row attends to
 * positions 0 .. pos + i of its own sequence, or in a sliding-window layer (`dims.window`) only the
 * last `window` of them (key tiles before a query tile's window are skipped, never read). Output [T, NH * HS]; optionally the per-(token, head)
 * logsumexp [T, NH] that a FlashAttention-2 backward needs (the trainer's).
 *
 * Tiled kernel (attention-prefill.wgsl), FlashAttention-2 style:
 * - Workgroup (query tile, kv head, row): the tile's query rows are (token, head-in-group) pairs of
 *   one sequence, BR = 64 / LANES of them, so the G heads that share a kv head share each staged
 *   K/V tile: K/V traffic is divided by BR rows, never repeated per head.
 * - LANES threads per query row, each holding HS / LANES floats of q and of the output in
 *   registers (at most 32: LANES is the smallest divisor of HS/4 that keeps it so: HS 64 -> 2,
 *   128 -> 4, 48 -> 2). Few lanes keep the cross-lane score reduction (through workgroup memory)
 *   cheap next to the FMAs, and 32 + 32 + BK registers fit real GPUs without spilling.
 * - BK keys per tile, the largest of 16/8/4 whose K and V tiles plus lane partials fit the
 *   workgroup memory (16 KiB, the WebGPU default: HS 64 -> 16, HS 128 -> 8; 32 KiB: 16 and 16).
 *   16 is the cap: larger tiles save a few barriers but double the unrolled tile code and the
 *   registers holding scores (llama.cpp and ORT's WebGPU flash attention also stage 16 keys).
 * - Online softmax in f32, scale 1/sqrt(HS) folded into q; three barriers per tile.
 * The naive kernel (attention-prefill-naive.wgsl, `variant: 'naive'`) is the readable definition:
 * one invocation per (token, head) walking keys one by one. It is kept as a second oracle and
 * fallback, not for speed.
 *
 * Supported: HS a multiple of 4 up to 256 (naive: up to 256), any G.
 * Reference: reference/attention-paged.ts `attentionPrefillPaged`.
 */
import tiledCode from './attention-prefill.wgsl?raw';
import naiveCode from './attention-prefill-naive.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { AttentionShape } from './attention-decode';
import { checkDim, checkElements, placeholder, SpecKernel } from './spec-kernel';
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
import { params, ro, rw, type KernelSpec } from './spec';

/** The tiled variant reads and writes vec4 rows, the naive one scalars; the interface is the same. */
function prefillSpec(variant: 'tiled' | 'naive', vec: 'f32' | 'vec4<f32>', code: string): KernelSpec {
  return {
    name: `attention-prefill.${variant}`,
    bindings: {
      out: rw('out', vec, '[T, NH * HS]'),
      lse: rw('lse', 'f32', '[T, NH] (when writeLse; a 16-byte placeholder otherwise)'),
      q: ro('q', vec, '[T, NH, HS]'),
      ...kvBindings(vec),
    },
    // scale = 1 / sqrt(HS); writeLse = 1 writes lse (a uniform, not an override: one pipeline serves both);
    // window: sliding window in tokens (model/config/attention-window.ts), 0 = full causal
    uniforms: params('B T maxBlocksPerSeq scale:f32 writeLse window', { var: 'params' }),
    shaders: { main: [ATTENTION_COMMON_WGSL, code] },
  };
}

export const PREFILL_ATTENTION_SPECS = {
  tiled: prefillSpec('tiled', 'vec4<f32>', `${BATCH_ROW_SCAN_WGSL}\n${KV_TILE_WGSL}\n${tiledCode}`),
  naive: prefillSpec('naive', 'f32', `${BATCH_ROW_SCAN_WGSL}\n${naiveCode}`),
};

export interface PrefillAttentionOptions {
  variant?: 'tiled' | 'naive';
  /** Workgroup bytes to plan for (default: the device limit); tests force 16 KiB, the WebGPU default. */
  workgroupStorageBytes?: number;
}

/** A prefill batch (its cache holds every row's prefix and this batch's tokens) and the outputs. */
export interface PrefillAttentionArgs extends PrefillBatchArgs {
  /** f32 [T, NH * HS], written. */
  out: BufferRef;
  /** f32 [T, NH], written when given: log of each softmax denominator (scaled scores). */
  lse?: BufferRef;
  /** f32 [T, NH, HS] after RoPE (QkvPrep). */
  q: BufferRef;
}

/** Tile sizes of the tiled kernel for a shape and a workgroup-memory budget. */
export interface PrefillTiling {
  workgroupSize: number;
  lanes: number;
  /** Query rows ((token, head) pairs) per workgroup. */
  rowsPerTile: number;
  /** Keys per staged K/V tile. */
  keysPerTile: number;
}

const MAX_DPT4 = 8;

export function prefillTiling(HS: number, budgetBytes: number): PrefillTiling {
  const { lanes, workgroupSize } = rowLanes(HS, MAX_DPT4);
  const part = (bk: number) => (lanes > 1 ? bk * workgroupSize : 1);
  const keysPerTile = [16, 8, 4, 2, 1].find((bk) => 4 * (2 * bk * HS + part(bk)) + 16 <= budgetBytes);
  if (!keysPerTile) throw new Error(`PrefillAttention: head dim ${HS} does not fit ${budgetBytes} bytes of workgroup memory`);
  return { workgroupSize, lanes, rowsPerTile: workgroupSize / lanes, keysPerTile };
}

export class PrefillAttention extends SpecKernel {
  readonly variant: 'tiled' | 'naive';
  readonly tiling: PrefillTiling;
  private readonly overrides: Record<string, number>;

  constructor(
    ctx: KernelContext,
    readonly shape: AttentionShape,
    opts: PrefillAttentionOptions = {},
  ) {
    const variant = opts.variant ?? 'tiled';
    super(ctx, PREFILL_ATTENTION_SPECS[variant]);
    const { NH, NKV, HS } = shape;
    checkTiledHeads('PrefillAttention', NH, NKV, HS);
    this.variant = variant;
    this.tiling = prefillTiling(HS, workgroupStorageBudget(ctx, opts.workgroupStorageBytes));
    const G = NH / NKV;
    const { workgroupSize: WG, lanes, keysPerTile: BK } = this.tiling;
    this.overrides =
      this.variant === 'tiled'
        ? {
            WG,
            HS,
            NKV,
            G,
            LANES: lanes,
            BK,
            KV_LEN: (BK * HS) / 4,
            PART_LEN: lanes > 1 ? BK * WG : 1,
            KV_BLOCK,
          }
        : { WG: 64, HS, NKV, G, KV_BLOCK };
  }

  /** The dispatch of one prefill batch (record it after QkvPrep wrote the batch's k, v). */
  encode(a: PrefillAttentionArgs): KernelCall[] {
    const { NH, NKV, HS } = this.shape;
    const { B, T, maxCount, maxBlocksPerSeq, window = 0 } = a;
    const label = `attention-prefill.${this.variant}`;
    for (const [name, v] of Object.entries({ B, T, maxCount, maxBlocksPerSeq })) checkDim(label, name, v);
    checkDim(label, 'window', window, 0);
    if (maxCount > T) throw new Error(`${label}: the longest row (${maxCount}) exceeds the batch's ${T} tokens`);
    checkElements(label, 'out', a.out, T * NH * HS);
    checkElements(label, 'q', a.q, T * NH * HS);
    if (a.lse) checkElements(label, 'lse', a.lse, T * NH);
    checkElements(label, 'rows', a.rows, B * 4);
    const G = NH / NKV;
    const call = this.call({
      pipeline: this.pipeline({ overrides: this.overrides }),
      buffers: { out: a.out, lse: a.lse ?? placeholder(this.ctx), q: a.q, k: a.k, v: a.v, blockTable: a.blockTable, rows: a.rows },
      uniforms: {
        B,
        T,
        maxBlocksPerSeq,
        scale: 1 / Math.sqrt(HS),
        writeLse: a.lse ? 1 : 0,
        window,
      },
      workgroups:
        this.variant === 'tiled'
          ? [Math.ceil((maxCount * G) / this.tiling.rowsPerTile), NKV, B]
          : grid2d(this.ctx, Math.ceil((T * NH) / 64)),
    });
    return [call];
  }
}
