/**
 * KvCache: the GPU side of the paged KV cache. Per layer one K and one V buffer, f32
 * `[numBlocks, NKV, KV_BLOCK, HS]` (docs/engine.md "Shared data layouts"), plus the block-table
 * buffer u32 `[maxSeqs, maxBlocksPerSeq]`, the size arithmetic that decides how many blocks fit a
 * memory budget and the binding limit, and the on-GPU block copy used for copy-on-write when `n`
 * choices fork from a shared partial block.
 * A hybrid model (some layers slide, some attend fully) has two pools: 'main' for the full-attention
 * layers and 'local' for the sliding ones, each with its own block count and block table (a row
 * per sequence in both), so the sliding layers' buffers hold about a window per sequence
 * (model/kv/kv-pools.ts sizes them; vLLM v1's hybrid KV cache manager keeps one block table per
 * group of layers the same way).
 *
 * Not here: which block belongs to whom. Reference counts, free lists and prefix hashing are the
 * KV block manager's (engine/generate); it writes block-table rows through `writeBlockTable`.
 * Also not here: the kernels that read and write the cache (kernels/qkv-prep, kernels/attention-*,
 * and the dense engineer's fused decode `qkv`).
 */
import { KV_BLOCK } from '../../kernels/kv-layout';
import type { ModelConfig } from '../config/model-config';

/** A block pool: 'main' (every layer, or a hybrid model's full-attention layers) or 'local' (its sliding layers). */
export type KvPool = 'main' | 'local';

/** A whole-block copy from `src` to `dst` within one pool (main when not given). */
export type BlockCopy = readonly [src: number, dst: number, pool?: KvPool];

/** The shape numbers of the cache that every kernel needs. */
export interface KvShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
}

export function kvShapeOf(config: ModelConfig): KvShape {
  return { numLayers: config.numLayers, numKvHeads: config.numKvHeads, headDim: config.headDim };
}

/** Bytes of one block in one layer's K (or V) buffer. */
export function kvBlockBytes(shape: KvShape): number {
  return shape.numKvHeads * KV_BLOCK * shape.headDim * 4;
}

/** Bytes the cache holds per token, K and V of every layer (f32). */
export function kvBytesPerToken(shape: KvShape): number {
  return 2 * shape.numLayers * shape.numKvHeads * shape.headDim * 4;
}

/** The device limits that bound one layer's buffer. */
export interface KvLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}

/**
 * Blocks that fit: the memory budget spread over 2 * L buffers, and each layer's buffer within
 * one binding (a layer's K is bound whole by every attention dispatch) and one buffer.
 */
export function kvBlocksThatFit(shape: KvShape, budgetBytes: number, limits: KvLimits): number {
  const block = kvBlockBytes(shape);
  const byBudget = Math.floor(budgetBytes / (2 * shape.numLayers * block));
  const byBinding = Math.floor(Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) / block);
  return Math.max(0, Math.min(byBudget, byBinding));
}

export interface KvCacheOptions {
  /** Rows of the block table: the most sequences alive at once. */
  maxSeqs: number;
  /** Longest context a sequence may reach, in tokens (sets the block-table width). */
  maxContext: number;
  /** Blocks per layer. Give this or `memoryBudgetBytes`. */
  numBlocks?: number;
  /** GPU bytes the whole cache (all layers, K and V) may take; blocks are derived from it. */
  memoryBudgetBytes?: number;
  /** A hybrid model's sliding layers and their pool's block count (with `numBlocks` for the main pool). */
  local?: { layers: readonly number[]; numBlocks: number };
  label?: string;
}

export class KvCache {
  readonly shape: KvShape;
  readonly numBlocks: number;
  /** Blocks of the local pool (0 without one). */
  readonly localNumBlocks: number;
  readonly maxSeqs: number;
  readonly maxBlocksPerSeq: number;
  /** k[l], v[l]: f32 [numBlocks, NKV, KV_BLOCK, HS], or [localNumBlocks, ...] for a local layer. */
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  /** u32 [maxSeqs, maxBlocksPerSeq]; entries past a sequence's length are never read. */
  readonly blockTable: GPUBuffer;
  /** The local pool's block table, same shape; null without a local pool. */
  readonly localBlockTable: GPUBuffer | null;
  /** Layers whose K/V live in the local pool. */
  private readonly localLayers: ReadonlySet<number>;
  /** Bytes of one block in one layer's K or V buffer. */
  readonly blockBytes: number;
  /** A buffer the size of one block: copies within one buffer are not allowed by WebGPU, so a copy goes through it. */
  private staging: GPUBuffer | null = null;

  constructor(
    private readonly device: GPUDevice,
    shapeOrConfig: KvShape | ModelConfig,
    opts: KvCacheOptions,
  ) {
    this.shape = 'numLayers' in shapeOrConfig && 'hiddenSize' in shapeOrConfig ? kvShapeOf(shapeOrConfig) : shapeOrConfig;
    const { numLayers, numKvHeads, headDim } = this.shape;
    if (!(numLayers > 0 && numKvHeads > 0 && headDim > 0)) throw new Error(`KvCache: bad shape ${JSON.stringify(this.shape)}`);
    if (!(opts.maxSeqs > 0) || !(opts.maxContext > 0)) throw new Error('KvCache: maxSeqs and maxContext must be positive');
    this.blockBytes = kvBlockBytes(this.shape);
    const limits: KvLimits = device.limits;
    const fit = kvBlocksThatFit(this.shape, opts.memoryBudgetBytes ?? Number.POSITIVE_INFINITY, limits);
    const numBlocks = opts.numBlocks ?? fit;
    if (opts.numBlocks === undefined && opts.memoryBudgetBytes === undefined) {
      throw new Error('KvCache: give numBlocks or memoryBudgetBytes');
    }
    if (numBlocks > fit) {
      throw new Error(
        `KvCache: ${numBlocks} blocks of ${this.blockBytes} bytes exceed one layer's binding limit ` +
          `(${Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize)} bytes) or the memory budget`,
      );
    }
    if (numBlocks < 1)
      throw new Error(`KvCache: the budget holds no block (one block of all layers is ${2 * numLayers * this.blockBytes} bytes)`);
    const local = opts.local;
    if (local) {
      if (opts.numBlocks === undefined) throw new Error('KvCache: a local pool needs numBlocks for the main pool');
      const fitsBinding = kvBlocksThatFit({ ...this.shape, numLayers: 1 }, Number.POSITIVE_INFINITY, limits);
      if (!(local.numBlocks >= 1 && local.numBlocks <= fitsBinding))
        throw new Error(`KvCache: ${local.numBlocks} local blocks, expected 1 .. ${fitsBinding} (one layer's binding limit)`);
      if (local.layers.length === 0 || local.layers.length >= numLayers || local.layers.some((l) => !(l >= 0 && l < numLayers)))
        throw new Error(`KvCache: local layers ${JSON.stringify(local.layers)} must be some, not all, of the ${numLayers} layers`);
    }
    this.numBlocks = numBlocks;
    this.localNumBlocks = local?.numBlocks ?? 0;
    this.localLayers = new Set(local?.layers ?? []);
    this.maxSeqs = opts.maxSeqs;
    this.maxBlocksPerSeq = Math.ceil(opts.maxContext / KV_BLOCK);
    const label = opts.label ?? 'kv';
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    for (let l = 0; l < numLayers; l++) {
      const size = this.blocksIn(this.poolOf(l)) * this.blockBytes;
      this.k.push(device.createBuffer({ label: `${label}.k[${l}]`, size, usage }));
      this.v.push(device.createBuffer({ label: `${label}.v[${l}]`, size, usage }));
    }
    const tableBytes = Math.max(16, this.maxSeqs * this.maxBlocksPerSeq * 4);
    this.blockTable = device.createBuffer({ label: `${label}.blockTable`, size: tableBytes, usage });
    this.localBlockTable = local ? device.createBuffer({ label: `${label}.localBlockTable`, size: tableBytes, usage }) : null;
  }

  /** The pool layer `l` keeps its K/V in. */
  poolOf(l: number): KvPool {
    return this.localLayers.has(l) ? 'local' : 'main';
  }

  /** Blocks of a pool. */
  blocksIn(pool: KvPool): number {
    return pool === 'local' ? this.localNumBlocks : this.numBlocks;
  }

  /** The block table layer `l`'s kernels read. */
  tableOf(l: number): GPUBuffer {
    return this.tableIn(this.poolOf(l));
  }

  /** The block table of a pool. */
  private tableIn(pool: KvPool): GPUBuffer {
    const table = pool === 'local' ? this.localBlockTable : this.blockTable;
    if (!table) throw new Error('KvCache: no local pool');
    return table;
  }

  /** GPU bytes held (K, V of every layer and the block tables). */
  get bytes(): number {
    return [...this.k, ...this.v, this.blockTable, ...(this.localBlockTable ? [this.localBlockTable] : [])].reduce((n, b) => n + b.size, 0);
  }

  /** Tokens the cache can hold in all. */
  get capacityTokens(): number {
    return this.numBlocks * KV_BLOCK;
  }

  /** Writes block-table row `seq` of `pool` (its first `blocks.length` entries). Queue-ordered before later submits. */
  writeBlockTable(seq: number, blocks: ArrayLike<number>, firstEntry = 0, pool: KvPool = 'main'): void {
    if (seq < 0 || seq >= this.maxSeqs) throw new Error(`KvCache: block-table row ${seq} out of [0, ${this.maxSeqs})`);
    if (firstEntry + blocks.length > this.maxBlocksPerSeq) {
      throw new Error(`KvCache: ${firstEntry + blocks.length} blocks exceed maxBlocksPerSeq ${this.maxBlocksPerSeq}`);
    }
    const data = Uint32Array.from(blocks);
    const count = this.blocksIn(pool);
    for (const b of data) if (b >= count) throw new Error(`KvCache: ${pool} block ${b} out of [0, ${count})`);
    if (data.length === 0) return;
    this.device.queue.writeBuffer(this.tableIn(pool), (seq * this.maxBlocksPerSeq + firstEntry) * 4, data);
  }

  /**
   * Records copies of whole blocks, `copies[i] = [src, dst, pool]`, in the K and V of every layer of
   * the copy's pool (copy-on-write of a shared partial block). Never submits. Copies within one
   * GPUBuffer are forbidden by WebGPU, so each goes src -> staging -> dst; commands of one encoder
   * run in order, so one staging block serves all of them.
   */
  recordCopyBlocks(encoder: GPUCommandEncoder, copies: readonly BlockCopy[]): void {
    for (const [src, dst, pool = 'main'] of copies) {
      const count = this.blocksIn(pool);
      if (src < 0 || src >= count || dst < 0 || dst >= count) {
        throw new Error(`KvCache: copy ${src} -> ${dst} out of [0, ${count}) (${pool} pool)`);
      }
    }
    const moves = copies.filter(([s, d]) => s !== d);
    if (moves.length === 0) return;
    this.staging ??= this.device.createBuffer({
      label: 'kv.copyStaging',
      size: this.blockBytes,
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    const n = this.blockBytes;
    for (const buffers of [this.k, this.v]) {
      buffers.forEach((buf, l) => {
        for (const [src, dst, pool = 'main'] of moves) {
          if (pool !== this.poolOf(l)) continue;
          encoder.copyBufferToBuffer(buf, src * n, this.staging!, 0, n);
          encoder.copyBufferToBuffer(this.staging!, 0, buf, dst * n, n);
        }
      });
    }
  }

  destroy(): void {
    for (const b of [...this.k, ...this.v, this.blockTable]) b.destroy();
    this.localBlockTable?.destroy();
    this.staging?.destroy();
  }
}
