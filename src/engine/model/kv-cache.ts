/**
 * KvCache: the GPU side of the paged KV cache. Per layer one K and one V buffer, f32
 * `[numBlocks, NKV, KV_BLOCK, HS]` (docs/engine.md "Shared data layouts"), plus the block-table
 * buffer u32 `[maxSeqs, maxBlocksPerSeq]`, the size arithmetic that decides how many blocks fit a
 * memory budget and the binding limit, and the on-GPU block copy used for copy-on-write when `n`
 * choices fork from a shared partial block.
 *
 * Not here: which block belongs to whom. Reference counts, free lists and prefix hashing are the
 * KV block manager's (engine/generate); it writes block-table rows through `writeBlockTable`.
 * Also not here: the kernels that read and write the cache (kernels/qkv-prep, kernels/attention-*,
 * and the dense engineer's fused decode `qkv`).
 */
import type { ModelConfig } from './config';

/** Tokens per KV block. Every kernel that addresses the cache bakes this in. */
export const KV_BLOCK = 16;

/** One row of a step's batch, as kernels read it (`struct BatchRow` in WGSL, 4 x u32). */
export interface BatchRow {
  /** Block-table row of the sequence. */
  seq: number;
  /** Position of this row's first token in its sequence (its cached prefix length). */
  pos: number;
  /** LoRA slot, NO_ADAPTER for none. */
  adapter: number;
  /** Tokens of this row in this step: 1 in decode, the chunk length in prefill. */
  count: number;
}

export const NO_ADAPTER = 0xffffffff;

/** Packs rows for upload as `array<BatchRow>` (16 bytes each, field order seq, pos, adapter, count). */
export function packBatchRows(rows: readonly BatchRow[]): Uint32Array {
  const out = new Uint32Array(Math.max(1, rows.length) * 4);
  rows.forEach((r, i) => out.set([r.seq, r.pos, r.adapter, r.count], i * 4));
  return out;
}

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
  label?: string;
}

export class KvCache {
  readonly shape: KvShape;
  readonly numBlocks: number;
  readonly maxSeqs: number;
  readonly maxBlocksPerSeq: number;
  /** k[l], v[l]: f32 [numBlocks, NKV, KV_BLOCK, HS]. */
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  /** u32 [maxSeqs, maxBlocksPerSeq]; entries past a sequence's length are never read. */
  readonly blockTable: GPUBuffer;
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
    this.numBlocks = numBlocks;
    this.maxSeqs = opts.maxSeqs;
    this.maxBlocksPerSeq = Math.ceil(opts.maxContext / KV_BLOCK);
    const label = opts.label ?? 'kv';
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    for (let l = 0; l < numLayers; l++) {
      this.k.push(device.createBuffer({ label: `${label}.k[${l}]`, size: numBlocks * this.blockBytes, usage }));
      this.v.push(device.createBuffer({ label: `${label}.v[${l}]`, size: numBlocks * this.blockBytes, usage }));
    }
    this.blockTable = device.createBuffer({
      label: `${label}.blockTable`,
      size: Math.max(16, this.maxSeqs * this.maxBlocksPerSeq * 4),
      usage,
    });
  }

  /** GPU bytes held (K, V of every layer and the block table). */
  get bytes(): number {
    return 2 * this.shape.numLayers * this.numBlocks * this.blockBytes + this.blockTable.size;
  }

  /** Tokens the cache can hold in all. */
  get capacityTokens(): number {
    return this.numBlocks * KV_BLOCK;
  }

  /** Writes block-table row `seq` (its first `blocks.length` entries). Queue-ordered before later submits. */
  writeBlockTable(seq: number, blocks: ArrayLike<number>, firstEntry = 0): void {
    if (seq < 0 || seq >= this.maxSeqs) throw new Error(`KvCache: block-table row ${seq} out of [0, ${this.maxSeqs})`);
    if (firstEntry + blocks.length > this.maxBlocksPerSeq) {
      throw new Error(`KvCache: ${firstEntry + blocks.length} blocks exceed maxBlocksPerSeq ${this.maxBlocksPerSeq}`);
    }
    const data = Uint32Array.from(blocks);
    for (const b of data) if (b >= this.numBlocks) throw new Error(`KvCache: block ${b} out of [0, ${this.numBlocks})`);
    if (data.length === 0) return;
    this.device.queue.writeBuffer(this.blockTable, (seq * this.maxBlocksPerSeq + firstEntry) * 4, data);
  }

  /**
   * Records copies of whole blocks, `pairs[i] = [src, dst]`, in every layer's K and V (copy-on-write
   * of a shared partial block). Never submits. Copies within one GPUBuffer are forbidden by WebGPU,
   * so each goes src -> staging -> dst; commands of one encoder run in order, so one staging
   * block serves all of them.
   */
  recordCopyBlocks(encoder: GPUCommandEncoder, pairs: ReadonlyArray<readonly [number, number]>): void {
    for (const [src, dst] of pairs) {
      if (src < 0 || src >= this.numBlocks || dst < 0 || dst >= this.numBlocks) {
        throw new Error(`KvCache: copy ${src} -> ${dst} out of [0, ${this.numBlocks})`);
      }
    }
    const moves = pairs.filter(([s, d]) => s !== d);
    if (moves.length === 0) return;
    this.staging ??= this.device.createBuffer({
      label: 'kv.copyStaging',
      size: this.blockBytes,
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    const n = this.blockBytes;
    for (const buffers of [this.k, this.v]) {
      for (const buf of buffers) {
        for (const [src, dst] of moves) {
          encoder.copyBufferToBuffer(buf, src * n, this.staging, 0, n);
          encoder.copyBufferToBuffer(this.staging, 0, buf, dst * n, n);
        }
      }
    }
  }

  destroy(): void {
    for (const b of [...this.k, ...this.v, this.blockTable]) b.destroy();
    this.staging?.destroy();
  }
}
