/**
 * PrefillAttention: causal GQA attention of a prefill batch over the paged KV cache, written after
 * QkvPrep has put the batch's k, v into the cache. Rows of several sequences, each with its own
 * first position (a cached prefix is reused, not recomputed): query i of a row attends to
 * positions 0 .. pos + i of its own sequence. Output [T, NH * HS]; optionally the per-(token, head)
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
import { bindGroupLayout, type PipelineCache } from '../gpu/pipelines';
import type { AttentionShape } from './attention-decode';
import { ParamsCache, assertDispatch, grid2d, packParams, withCommon, workgroupStorageBudget } from './attention-shared';

export interface PrefillAttentionOptions {
  variant?: 'tiled' | 'naive';
  /** Workgroup bytes to plan for (default: the device limit); tests force 16 KiB, the WebGPU default. */
  workgroupStorageBytes?: number;
}

export interface PrefillAttentionIO {
  /** f32 [T, NH * HS], written. */
  out: GPUBuffer;
  /** f32 [T, NH], written when given: log of each softmax denominator (scaled scores). */
  lse?: GPUBuffer;
  /** f32 [T, NH, HS] after RoPE (QkvPrep). */
  q: GPUBuffer;
  /** This layer's KV cache holding every row's prefix and this batch's tokens. */
  k: GPUBuffer;
  v: GPUBuffer;
  blockTable: GPUBuffer;
  /** array<BatchRow> [B]; tokens are the rows' tokens in row order. */
  rows: GPUBuffer;
}

export interface PrefillAttentionDims {
  B: number;
  /** Tokens in the batch (sum of counts). */
  T: number;
  /** Tokens of the longest row (sizes the grid). */
  maxCount: number;
  maxBlocksPerSeq: number;
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
const MAX_HS = 256;

export function prefillTiling(HS: number, budgetBytes: number): PrefillTiling {
  const HS4 = HS / 4;
  let lanes = 1;
  while (HS4 % lanes !== 0 || HS4 / lanes > MAX_DPT4) lanes++;
  const workgroupSize = lanes * Math.floor(64 / lanes);
  const part = (bk: number) => (lanes > 1 ? bk * workgroupSize : 1);
  const keysPerTile = [16, 8, 4, 2, 1].find((bk) => 4 * (2 * bk * HS + part(bk)) + 16 <= budgetBytes);
  if (!keysPerTile) throw new Error(`PrefillAttention: head dim ${HS} does not fit ${budgetBytes} bytes of workgroup memory`);
  return { workgroupSize, lanes, rowsPerTile: workgroupSize / lanes, keysPerTile };
}

export class PrefillAttention {
  readonly variant: 'tiled' | 'naive';
  readonly tiling: PrefillTiling;
  private readonly layout: GPUBindGroupLayout;
  private readonly pipeline: GPUComputePipeline;
  private readonly params: ParamsCache;
  private readonly noLse: GPUBuffer;

  constructor(
    private readonly device: GPUDevice,
    cache: PipelineCache,
    readonly shape: AttentionShape,
    opts: PrefillAttentionOptions = {},
  ) {
    const { NH, NKV, HS } = shape;
    if (NH % NKV !== 0) throw new Error(`PrefillAttention: ${NH} heads are not a multiple of ${NKV} kv heads`);
    if (HS % 4 !== 0 || HS > MAX_HS) throw new Error(`PrefillAttention: head dim ${HS} must be a multiple of 4 and <= ${MAX_HS}`);
    this.variant = opts.variant ?? 'tiled';
    this.tiling = prefillTiling(HS, workgroupStorageBudget(device, opts.workgroupStorageBytes));
    this.layout = bindGroupLayout(device, 'attention-prefill', [
      'storage', // 0 out [T, NH * HS]
      'storage', // 1 lse [T, NH] (optional output; a 16-byte placeholder otherwise)
      'read-only-storage', // 2 q [T, NH, HS]
      'read-only-storage', // 3 k cache (this layer)
      'read-only-storage', // 4 v cache (this layer)
      'read-only-storage', // 5 block table
      'read-only-storage', // 6 batch rows
      'uniform', // 7 params: B, T, maxBlocksPerSeq, scale, writeLse
    ]);
    this.params = new ParamsCache(device, 'attention-prefill.params');
    this.noLse = device.createBuffer({ label: 'attention-prefill.noLse', size: 16, usage: GPUBufferUsage.STORAGE });
    const G = NH / NKV;
    const { workgroupSize: WG, lanes, keysPerTile: BK } = this.tiling;
    const constants: Record<string, number> =
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
          }
        : { WG: 64, HS, NKV, G };
    this.pipeline = cache.get({
      label: `attention-prefill.${this.variant}`,
      code: withCommon(this.variant === 'tiled' ? tiledCode : naiveCode),
      entryPoint: 'main',
      layout: device.createPipelineLayout({ label: 'attention-prefill', bindGroupLayouts: [this.layout] }),
      constants,
    });
  }

  /** Records the dispatch into `pass`; never submits. */
  record(pass: GPUComputePassEncoder, io: PrefillAttentionIO, dims: PrefillAttentionDims): void {
    const { NH, NKV, HS } = this.shape;
    const { B, T, maxCount } = dims;
    if (B < 1 || T < 1 || maxCount < 1 || maxCount > T) throw new Error(`PrefillAttention: bad batch (B ${B}, T ${T}, maxCount ${maxCount})`);
    if (io.out.size < T * NH * HS * 4) throw new Error(`PrefillAttention: out buffer too small for T=${T}`);
    if (io.q.size < T * NH * HS * 4) throw new Error(`PrefillAttention: q buffer too small for T=${T}`);
    if (io.lse && io.lse.size < T * NH * 4) throw new Error(`PrefillAttention: lse buffer too small for T=${T}`);
    if (io.rows.size < B * 16) throw new Error(`PrefillAttention: rows buffer holds fewer than ${B} rows`);
    const params = this.params.get(
      packParams([
        ['u32', B],
        ['u32', T],
        ['u32', dims.maxBlocksPerSeq],
        ['f32', 1 / Math.sqrt(HS)],
        ['u32', io.lse ? 1 : 0],
      ]),
    );
    const bindGroup = this.device.createBindGroup({
      label: 'attention-prefill',
      layout: this.layout,
      entries: [io.out, io.lse ?? this.noLse, io.q, io.k, io.v, io.blockTable, io.rows, params].map((buffer, binding) => ({
        binding,
        resource: { buffer },
      })),
    });
    pass.setPipeline(this.pipeline);
    pass.setBindGroup(0, bindGroup);
    if (this.variant === 'tiled') {
      const G = NH / NKV;
      const tiles = Math.ceil((maxCount * G) / this.tiling.rowsPerTile);
      assertDispatch(this.device, 'attention-prefill', tiles, NKV, B);
      pass.dispatchWorkgroups(tiles, NKV, B);
    } else {
      pass.dispatchWorkgroups(...grid2d(this.device, Math.ceil((T * NH) / 64)));
    }
  }

  destroy(): void {
    this.params.destroy();
    this.noLse.destroy();
  }
}
