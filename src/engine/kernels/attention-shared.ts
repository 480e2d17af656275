/**
 * Pieces shared by the attention-family wrappers (qkv-prep, prefill, decode, merge): the common
 * WGSL snippet (KV_BLOCK, paged-cache addressing), the paged-cache bindings, and small sizing helpers.
 *
 * Not here: kernels (one file per kernel), the KV cache buffers (model/kv/kv-cache.ts), the generic
 * wrapper helpers every kernel family uses (spec-kernel.ts, gpu/kernel-call.ts).
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef } from '../gpu/kernel-call';
import commonWgsl from './attention-common.wgsl?raw';
import rowScanWgsl from './batch-row-scan.wgsl?raw';
import kvTileWgsl from './kv-tile.wgsl?raw';
import { BATCH_ROW } from './kv-layout';
import { ro, type BindingSpec } from './spec';

/** The paged-cache WGSL helpers (KV_BLOCK, kv_index, first_key), put before a kernel's own code. */
export const ATTENTION_COMMON_WGSL = commonWgsl;

/**
 * The paged-cache bindings of the kernels that read the cache (decode, prefill, backward), in this
 * order after their own: this layer's K and V (elements `vec`), the block table, the batch rows.
 */
export function kvBindings(vec: 'f32' | 'vec4<f32>'): Record<'k' | 'v' | 'blockTable' | 'rows', BindingSpec> {
  return {
    k: ro('kCache', vec, "this layer's K cache [numBlocks, NKV, 16, HS]"),
    v: ro('vCache', vec, "this layer's V cache [numBlocks, NKV, 16, HS]"),
    blockTable: ro('blockTable', 'u32', '[maxSeqs, maxBlocksPerSeq]'),
    rows: ro('rows', BATCH_ROW, '[B]'),
  };
}

/**
 * What every kernel that reads the paged cache takes besides its own buffers (the buffers of
 * `kvBindings`): this layer's K and V with the batch's k, v already written, the block table, the
 * batch rows (array<BatchRow> [B]: in prefill the tokens are the rows' tokens in row order, in
 * decode row b's context is rows[b].pos + 1), and the layer's sliding window.
 */
export interface PagedKvArgs {
  k: BufferRef;
  v: BufferRef;
  blockTable: BufferRef;
  rows: BufferRef;
  B: number;
  maxBlocksPerSeq: number;
  /** This layer's sliding window in tokens (model/config/attention-window.ts); 0 or absent: full causal. */
  window?: number;
}

/** A prefill batch's token counts (PagedKvArgs' rows in prefill and its backward). */
export interface PrefillBatchArgs extends PagedKvArgs {
  /** Tokens in the batch (sum of counts). */
  T: number;
  /** Tokens of the longest row (sizes the grid). */
  maxCount: number;
}

/** `find_row(t)`: the batch row of a prefill batch's token t (for kernels whose params have B). */
export const BATCH_ROW_SCAN_WGSL = rowScanWgsl;

/** `stage_kv_tile(...)`: a K/V tile into workgroup memory (tiled prefill attention and its backward). */
export const KV_TILE_WGSL = kvTileWgsl;

/**
 * Threads per query row of a tiled attention kernel: the fewest that divide HS/4 and leave each at
 * most `maxDpt4` vec4s of a head; the workgroup holds as many rows as fit 64 threads.
 */
export function rowLanes(HS: number, maxDpt4: number): { lanes: number; workgroupSize: number } {
  const HS4 = HS / 4;
  let lanes = 1;
  while (HS4 % lanes !== 0 || HS4 / lanes > maxDpt4) lanes++;
  return { lanes, workgroupSize: lanes * Math.floor(64 / lanes) };
}

/** The tiled kernels' head limit: HS/4 vec4s spread over at most 64 lanes with <= 8 (prefill) or 4 (backward) each. */
const TILED_MAX_HS = 256;

/** Throws unless the tiled prefill kernels (forward and backward) take this head shape. */
export function checkTiledHeads(owner: string, NH: number, NKV: number, HS: number): void {
  if (NH % NKV !== 0) throw new Error(`${owner}: ${NH} heads are not a multiple of ${NKV} kv heads`);
  if (HS % 4 !== 0 || HS > TILED_MAX_HS) throw new Error(`${owner}: head dim ${HS} must be a multiple of 4 and <= ${TILED_MAX_HS}`);
}

/** Workgroup-storage bytes a kernel may plan for: the device limit unless a smaller one is forced (tests). */
export function workgroupStorageBudget(ctx: KernelContext, forced?: number): number {
  if (forced === undefined) return ctx.maxWorkgroupStorage;
  if (forced > ctx.maxWorkgroupStorage) throw new Error(`workgroup storage ${forced} exceeds the device limit ${ctx.maxWorkgroupStorage}`);
  return forced;
}

/** Largest divisor of n that is <= cap (at least 1). */
export function largestDivisorAtMost(n: number, cap: number): number {
  for (let d = Math.min(n, Math.max(1, Math.floor(cap))); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

/** Splits n workgroups over x and y so neither exceeds the per-dimension limit (flat index y * nx + x). */
export function grid2d(ctx: KernelContext, n: number): [number, number, number] {
  const max = ctx.maxWorkgroupsPerDimension;
  if (n <= max) return [Math.max(1, n), 1, 1];
  const y = Math.ceil(n / max);
  return [Math.ceil(n / y), y, 1];
}
