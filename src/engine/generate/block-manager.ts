/**
 * KvBlockManager: who owns which block of the paged KV cache (model/kv-cache.ts holds the buffers).
 *
 * - Blocks (KV_BLOCK tokens each, every layer) carry reference counts: a sequence holds each of its
 *   blocks once; `n` choices of a prompt and beams share their full prefix blocks.
 * - Prefix cache: a full block whose tokens are all known is registered under a hash chain,
 *   key_i = H(key_{i-1}, tokens of block i), rooted in the request's cache salt and LoRA adapter (the
 *   KV of a token depends on the adapter's weights). A lookup walks the chain from the root and
 *   checks each entry's parent and tokens exactly, so a hash collision can only cost a miss.
 * - A block nobody references keeps its contents while it is registered: it waits in an LRU list,
 *   reused by a prefix hit or, least recently used first, evicted when a fresh block is needed.
 *   Unregistered free blocks are handed out first.
 * - Block-table rows (one per live sequence; also its sampler slot) come from a free list.
 * - Sliding window (`window` > 0, when every layer of the model slides: attention-window.ts
 *   modelWindow): a sequence drops the blocks before its window as it advances (sequence.ts), so
 *   the blocks it holds stay about window / KV_BLOCK + the step's. A dropped block is released like
 *   any other: if registered it stays a valid prefix-cache entry (its K/V are those of its token
 *   chain, whatever window later queries use) until evicted, and eviction unregisters it.
 *   A model with some full-attention layers (hybrid) keeps every block: its local layers are masked
 *   but not yet given a smaller pool of their own.
 *
 * Not here: the GPU buffers and block copies (KvCache), when to preempt (scheduler.ts).
 */
import { KV_BLOCK } from '../model/kv-cache';

interface CachedEntry {
  block: number;
  parent: string;
  tokens: readonly number[];
}

/** The root of a prefix chain: requests share cached blocks only with the same salt and adapter. */
export function prefixRoot(cacheSalt: string | undefined, adapterKey: string | null): string {
  return `root:${cacheSalt === undefined ? '-' : `s${cacheSalt.length}:${cacheSalt}`}|${adapterKey === null ? '-' : `a:${adapterKey}`}`;
}

/** Key of the block after `parent` holding `tokens`: a 53-bit hash of the parent key and the ids. */
export function chainKey(parent: string, tokens: readonly number[]): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  const mix = (v: number) => {
    h1 = Math.imul(h1 ^ v, 2654435761);
    h2 = Math.imul(h2 ^ v, 1597334677);
  };
  for (let i = 0; i < parent.length; i++) mix(parent.charCodeAt(i));
  mix(0x9e3779b9);
  for (const t of tokens) mix(t);
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `b${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)}`;
}

export interface PrefixMatch {
  /** Cached blocks of the prefix, in order (not yet acquired). */
  blocks: number[];
  /** Chain key of each matched block. */
  keys: string[];
}

export class KvBlockManager {
  private readonly refs: Int32Array;
  private readonly keyOf: (string | null)[];
  /** Unregistered free blocks (a stack: recently freed blocks are warm). */
  private readonly free: number[] = [];
  /** Registered blocks nobody references, least recently used first (Map keeps insertion order). */
  private readonly evictable = new Map<number, true>();
  private readonly cache = new Map<string, CachedEntry>();
  private readonly freeRows: number[];
  /** Prefix-cache hits and lookups in blocks (stats). */
  hits = 0;
  lookups = 0;

  constructor(
    readonly numBlocks: number,
    readonly maxSeqs: number,
    /** The model's window when every layer slides (modelWindow), 0 otherwise. */
    readonly window = 0,
  ) {
    this.refs = new Int32Array(numBlocks);
    this.keyOf = new Array(numBlocks).fill(null);
    for (let b = numBlocks - 1; b >= 0; b--) this.free.push(b);
    this.freeRows = Array.from({ length: maxSeqs }, (_, i) => maxSeqs - 1 - i);
  }

  /**
   * Blocks a prompt of `tokens` positions holds at most while it is prefilled in chunks of at most
   * `chunk` tokens: all of them, or with a window the window's blocks plus a chunk's.
   */
  blocksToHold(tokens: number, chunk: number): number {
    const all = Math.ceil(tokens / KV_BLOCK);
    return this.window > 0 ? Math.min(all, Math.ceil(this.window / KV_BLOCK) + Math.ceil(chunk / KV_BLOCK) + 1) : all;
  }

  /** Blocks that can be handed out now (free, or cached and unreferenced). */
  get available(): number {
    return this.free.length + this.evictable.size;
  }

  get rowsAvailable(): number {
    return this.freeRows.length;
  }

  /** Registered blocks (referenced or not). */
  get cachedBlocks(): number {
    return this.cache.size;
  }

  refCount(block: number): number {
    return this.refs[block];
  }

  allocRow(): number | null {
    return this.freeRows.pop() ?? null;
  }

  freeRow(row: number): void {
    if (this.freeRows.includes(row)) throw new Error(`KvBlockManager: row ${row} freed twice`);
    this.freeRows.push(row);
  }

  /** A fresh block with one reference, or null when none is free or evictable. */
  allocate(): number | null {
    let b = this.free.pop();
    if (b === undefined) {
      const oldest = this.evictable.keys().next();
      if (oldest.done) return null;
      b = oldest.value;
      this.evictable.delete(b);
      this.cache.delete(this.keyOf[b]!);
      this.keyOf[b] = null;
    }
    this.refs[b] = 1;
    return b;
  }

  /** One more reference to a block (a shared prefix, or a cache hit taken out of the LRU list). */
  acquire(block: number): void {
    if (this.refs[block] === 0) {
      if (!this.evictable.delete(block)) throw new Error(`KvBlockManager: block ${block} is free and not cached`);
    }
    this.refs[block]++;
  }

  /** Drops a reference; an unreferenced block becomes free, or evictable when it is cached. */
  release(block: number): void {
    if (this.refs[block] <= 0) throw new Error(`KvBlockManager: block ${block} released more often than held`);
    if (--this.refs[block] > 0) return;
    if (this.keyOf[block] !== null) this.evictable.set(block, true);
    else this.free.push(block);
  }

  releaseAll(blocks: readonly number[]): void {
    for (const b of blocks) this.release(b);
  }

  /**
   * The longest chain of cached full blocks matching `tokens` from `root`, at most `maxBlocks`.
   * The blocks are not acquired: call `acquire` on the ones kept.
   */
  match(root: string, tokens: readonly number[], maxBlocks: number): PrefixMatch {
    const out: PrefixMatch = { blocks: [], keys: [] };
    let parent = root;
    const n = Math.min(maxBlocks, Math.floor(tokens.length / KV_BLOCK));
    for (let i = 0; i < n; i++) {
      const ids = tokens.slice(i * KV_BLOCK, (i + 1) * KV_BLOCK);
      const key = chainKey(parent, ids);
      const e = this.cache.get(key);
      this.lookups++;
      if (!e || e.parent !== parent || e.tokens.some((t, j) => t !== ids[j])) break;
      this.hits++;
      out.blocks.push(e.block);
      out.keys.push(key);
      parent = key;
    }
    return out;
  }

  /**
   * Registers a full block (its KV written by a submitted step) under the chain key after `parent`;
   * returns the key. When another block already holds the same content the registry keeps that one.
   */
  register(block: number, parent: string, tokens: readonly number[]): string {
    if (tokens.length !== KV_BLOCK) throw new Error(`KvBlockManager: a cached block holds ${KV_BLOCK} tokens, got ${tokens.length}`);
    const key = chainKey(parent, tokens);
    if (this.keyOf[block] === null && !this.cache.has(key)) {
      this.cache.set(key, { block, parent, tokens: tokens.slice() });
      this.keyOf[block] = key;
    }
    return key;
  }
}
