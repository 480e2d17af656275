/**
 * KvBlockManager: who owns which block of the paged KV cache (model/kv/kv-cache.ts holds the buffers).
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
 * - Sliding window (`window` > 0, when every layer of the model slides: config/attention-window.ts
 *   modelWindow): a sequence drops the blocks before its window as it advances (generate/sequence.ts), so
 *   the blocks it holds stay about window / KV_BLOCK + the step's. A dropped block is released like
 *   any other: if registered it stays a valid prefix-cache entry (its K/V are those of its token
 *   chain, whatever window later queries use) until evicted, and eviction unregisters it.
 * - Hybrid models (some layers slide, some attend fully: config/attention-window.ts hybridWindow): this
 *   manager owns the full-attention layers' blocks (window 0) and `local`, a second manager (no rows
 *   of its own), the sliding layers' blocks, dropped behind the window as above. A sequence holds a
 *   block of each pool for every block position it keeps (generate/sequence.ts), registered under the same
 *   chain key in both. A prefix hit needs the main pool's blocks of the whole prefix and the local
 *   pool's blocks of the window before its end (what the first recomputed query sees): `match`
 *   shortens the hit until both hold (vLLM v1's hybrid cache-hit search does the same), so a prefix
 *   whose local blocks were evicted is recomputed, never read from stale blocks.
 *
 * Not here: the GPU buffers and block copies (KvCache), when to preempt (generate/scheduler.ts).
 */
import { firstVisibleKey } from '../config/attention-window';
import { KV_BLOCK } from '../../kernels/kv-layout';

/** A sequence's block entry whose block was released because it lies wholly before the window. */
export const DROPPED = -1;

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
  /** With a local pool: its blocks of the same positions, DROPPED before the window of the prefix's end. */
  local: number[];
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
    /** The model's window when every layer slides (modelWindow), 0 otherwise; a local pool's window. */
    readonly window = 0,
    /** A hybrid model's sliding layers' pool (window > 0, maxSeqs 0); this one is then the full layers'. */
    readonly local: KvBlockManager | null = null,
  ) {
    if (local && (window !== 0 || local.window === 0 || local.local !== null || local.maxSeqs !== 0))
      throw new Error('KvBlockManager: a local pool has a window and no rows or pool of its own, beside a full-attention pool');
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

  /** Whether every pool can hand out `count` blocks now. */
  hasAvailable(count: number): boolean {
    return this.available >= count && (this.local?.hasAvailable(count) ?? true);
  }

  /**
   * Whether a prompt of `tokens` positions whose cached prefix is `match` can be admitted with
   * `forks` more choices (a copied partial block each), leaving a block per running sequence, in
   * every pool.
   */
  admits(tokens: number, chunk: number, match: PrefixMatch, forks: number, running: number): boolean {
    const need = this.blocksToHold(tokens, chunk) - match.blocks.length + forks;
    if (need > this.available - running) return false;
    if (!this.local) return true;
    const cachedLocal = match.local.filter((b) => b !== DROPPED).length;
    return this.local.blocksToHold(tokens, chunk) - cachedLocal + forks <= this.local.available - running;
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
    const out: PrefixMatch = { blocks: [], keys: [], local: [] };
    let parent = root;
    const n = Math.min(maxBlocks, Math.floor(tokens.length / KV_BLOCK));
    for (let i = 0; i < n; i++) {
      const ids = tokens.slice(i * KV_BLOCK, (i + 1) * KV_BLOCK);
      const key = chainKey(parent, ids);
      const block = this.cached(key, parent, ids);
      this.lookups++;
      if (block === null) break;
      this.hits++;
      out.blocks.push(block);
      out.keys.push(key);
      parent = key;
    }
    if (this.local) this.matchLocal(this.local, root, tokens, out);
    return out;
  }

  /**
   * Shortens `out` to the longest prefix whose window blocks the local pool still holds (those the
   * query right after the prefix sees), and fills `out.local` with them.
   */
  private matchLocal(local: KvBlockManager, root: string, tokens: readonly number[], out: PrefixMatch): void {
    const has = out.keys.map((key, i) =>
      local.cached(key, i === 0 ? root : out.keys[i - 1], tokens.slice(i * KV_BLOCK, (i + 1) * KV_BLOCK)),
    );
    let k = out.blocks.length;
    const firstSeen = (n: number) => Math.floor(firstVisibleKey(n * KV_BLOCK, local.window) / KV_BLOCK);
    while (k > 0 && has.slice(firstSeen(k), k).some((b) => b === null)) k--;
    this.hits -= out.blocks.length - k;
    out.blocks.length = k;
    out.keys.length = k;
    out.local = has.slice(0, k).map((b, i) => (i < firstSeen(k) ? DROPPED : b!));
  }

  /** The block registered under `key` if its entry has this parent and tokens (a collision is a miss). */
  private cached(key: string, parent: string, ids: readonly number[]): number | null {
    const e = this.cache.get(key);
    return e && e.parent === parent && e.tokens.every((t, j) => t === ids[j]) ? e.block : null;
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
