/**
 * Sequence: one row of the KV cache's block table and the tokens behind it: a prompt being
 * prefilled, a choice being decoded, or a beam. It tracks which of its tokens are in the cache
 * (`computed`), its blocks and how many of them the GPU block table already lists, and the prefix
 * chain of its full blocks, which it registers in the prefix cache as they fill. With a model-wide
 * sliding window (KvBlockManager.window) it drops the blocks no later query can see, keeping their
 * places in `blocks` as DROPPED so block i still holds positions 16 i .. 16 i + 15. A hybrid model
 * (KvBlockManager.local) gives it a second block list, `local`, for its sliding layers: one entry
 * per block position like the main list, dropped behind the window the same way, while the main
 * list (the full-attention layers) keeps every block. Both lists grow, fork and are released
 * together, so a step never finds one pool's blocks without the other's.
 *
 * Not here: ownership rules (model/kv/block-manager.ts), scheduling (scheduler.ts).
 */
import { firstVisibleKey } from '../model/config/attention-window';
import { type BlockCopy, type KvCache, type KvPool } from '../model/kv/kv-cache';
import { KV_BLOCK } from '../kernels/kv-layout';
import { DROPPED, type KvBlockManager, type PrefixMatch } from '../model/kv/block-manager';

export { DROPPED };

/** A sequence's blocks in one pool: entry i holds positions 16 i .. 16 i + 15 (DROPPED before the window). */
export class BlockList {
  blocks: number[] = [];
  /** Leading entries that are DROPPED. */
  dropped = 0;
  /** Entries already written to the GPU block table. */
  written = 0;

  /** Blocks held (references owned). */
  get live(): number {
    return this.blocks.length - this.dropped;
  }

  /** Entries missing to hold `tokens` positions. */
  missing(tokens: number): number {
    return Math.max(0, Math.ceil(tokens / KV_BLOCK) - this.blocks.length);
  }

  /** Takes cached blocks (DROPPED entries stay dropped). */
  adopt(pool: KvBlockManager, blocks: readonly number[]): void {
    for (const b of blocks) if (b !== DROPPED) pool.acquire(b);
    this.blocks = blocks.slice();
    this.dropped = 0;
    while (this.dropped < blocks.length && blocks[this.dropped] === DROPPED) this.dropped++;
    this.written = 0;
  }

  /**
   * Releases the entries wholly before the window of a query at `pos` in `pool` (none when the pool
   * has no window), at most the first `upTo`.
   */
  dropBefore(pool: KvBlockManager, pos: number, upTo: number): void {
    if (pool.window === 0) return;
    const dead = Math.min(Math.floor(firstVisibleKey(pos, pool.window) / KV_BLOCK), upTo);
    for (; this.dropped < dead; this.dropped++) {
      pool.release(this.blocks[this.dropped]);
      this.blocks[this.dropped] = DROPPED;
    }
  }

  /**
   * Gives `child` the first `full` entries (one more reference to each live block) and, when
   * `partial`, a fresh copy of entry `full`; returns that copy. The pool must have a block for it.
   */
  shareInto(child: BlockList, pool: KvBlockManager, name: KvPool, full: number, partial: boolean): BlockCopy | null {
    for (let i = this.dropped; i < full; i++) pool.acquire(this.blocks[i]);
    child.blocks = this.blocks.slice(0, full);
    child.dropped = Math.min(this.dropped, full);
    if (!partial) return null;
    const dst = pool.allocate()!;
    child.blocks.push(dst);
    return [this.blocks[full], dst, name];
  }

  /** Writes the entries the GPU table of `pool` lacks; a DROPPED one as block 0 (the kernels never read it). */
  sync(kv: KvCache, row: number, pool: KvPool): void {
    if (this.written >= this.blocks.length) return;
    const fresh = this.blocks.slice(this.written).map((b) => (b === DROPPED ? 0 : b));
    kv.writeBlockTable(row, fresh, this.written, pool);
    this.written = this.blocks.length;
  }

  release(pool: KvBlockManager): void {
    pool.releaseAll(this.blocks.slice(this.dropped));
    this.blocks = [];
    this.dropped = 0;
    this.written = 0;
  }
}

export class Sequence {
  /** Every token of the sequence: prompt, then output. */
  readonly tokens: number[];
  /** Blocks of the main pool: every layer's, or a hybrid model's full-attention layers'. */
  readonly main = new BlockList();
  /** Blocks of a hybrid model's local pool (its sliding layers'); empty without one. */
  readonly local = new BlockList();
  /** Tokens whose K/V are in the cache (positions 0 .. computed - 1). */
  computed = 0;
  /** Leading blocks registered in the prefix cache, and the chain key of the last one. */
  registered = 0;
  chain: string;

  constructor(
    readonly row: number,
    tokens: readonly number[],
    /** Prefix-chain root: the cache salt and adapter (model/kv/block-manager.ts prefixRoot). */
    readonly root: string,
  ) {
    this.tokens = tokens.slice();
    this.chain = root;
  }

  get length(): number {
    return this.tokens.length;
  }

  /** The main pool's blocks of positions 0 .. blocks.length * KV_BLOCK - 1 (DROPPED before the window). */
  get blocks(): readonly number[] {
    return this.main.blocks;
  }

  /** Leading entries of `blocks` that are DROPPED. */
  get dropped(): number {
    return this.main.dropped;
  }

  /** Blocks this sequence holds in the main pool (references it owns). */
  get liveBlocks(): number {
    return this.main.live;
  }

  /** The block lists with their pools: the main one, and the local one of a hybrid model. */
  private lists(mgr: KvBlockManager): Array<[BlockList, KvBlockManager, KvPool]> {
    return mgr.local
      ? [
          [this.main, mgr, 'main'],
          [this.local, mgr.local, 'local'],
        ]
      : [[this.main, mgr, 'main']];
  }

  /** Takes cached prefix blocks (already matched): the first match.blocks.length * KV_BLOCK tokens are computed. */
  adoptPrefix(mgr: KvBlockManager, match: PrefixMatch): void {
    if (this.main.blocks.length !== 0) throw new Error('Sequence: a prefix can only be adopted by an empty sequence');
    this.main.adopt(mgr, match.blocks);
    if (mgr.local) this.local.adopt(mgr.local, match.local);
    this.computed = match.blocks.length * KV_BLOCK;
    this.registered = match.blocks.length;
    this.chain = match.keys.length > 0 ? match.keys[match.keys.length - 1] : this.root;
  }

  /**
   * Releases the blocks that lie wholly before the window of the next query (position `computed`):
   * no query of this or a later step reads them. Called as the next step is planned, so the step
   * that last read them was submitted before they can be handed out again (queue order). Only
   * registered blocks are dropped, so the prefix chain stays whole.
   */
  dropOutOfWindow(mgr: KvBlockManager): void {
    for (const [list, pool] of this.lists(mgr)) list.dropBefore(pool, this.computed, this.registered);
  }

  /**
   * Grows the block lists to hold `tokens` positions (the main list `mainTokens`, when a hybrid
   * model's recomputation takes its full-attention blocks at once), after dropping the blocks behind
   * the window; false (nothing taken) when some pool runs out.
   */
  reserve(mgr: KvBlockManager, tokens: number, mainTokens = tokens): boolean {
    this.dropOutOfWindow(mgr);
    const lists = this.lists(mgr);
    const missing = lists.map(([list], i) => list.missing(i === 0 ? Math.max(tokens, mainTokens) : tokens));
    if (lists.some(([, pool], i) => missing[i] > pool.available)) return false;
    lists.forEach(([list, pool], i) => {
      for (let n = missing[i]; n > 0; n--) list.blocks.push(pool.allocate()!);
    });
    return true;
  }

  /** Positions past `computed` that the blocks held and those available could hold, in every pool. */
  room(mgr: KvBlockManager): number {
    return Math.min(...this.lists(mgr).map(([list, pool]) => (list.blocks.length + pool.available) * KV_BLOCK)) - this.computed;
  }

  /** Writes the block-table entries the GPU does not have yet (queue-ordered before the next submit). */
  syncTable(kv: KvCache): void {
    this.main.sync(kv, this.row, 'main');
    this.local.sync(kv, this.row, 'local');
  }

  /** Marks `count` more tokens as computed (a submitted step wrote them) and registers full blocks. */
  advance(mgr: KvBlockManager, count: number): void {
    this.computed += count;
    const full = Math.min(Math.floor(this.computed / KV_BLOCK), Math.floor(this.tokens.length / KV_BLOCK));
    while (this.registered < full) {
      const i = this.registered;
      const ids = this.tokens.slice(i * KV_BLOCK, (i + 1) * KV_BLOCK);
      const parent = this.chain;
      this.chain = mgr.register(this.main.blocks[i], parent, ids);
      // Registered before it can be dropped (dropBefore stops at `registered`): never DROPPED here.
      if (mgr.local) mgr.local.register(this.local.blocks[i], parent, ids);
      this.registered++;
    }
  }

  /**
   * A copy on another row sharing every full block and a fresh copy of the partial last block, in
   * each pool (copy-on-write when choices or beams fork). Returns the child and the block copies to
   * record, or null when some pool has no block for the copy.
   */
  fork(mgr: KvBlockManager, row: number): { child: Sequence; copies: BlockCopy[] } | null {
    const full = Math.floor(this.computed / KV_BLOCK);
    const partial = this.computed % KV_BLOCK !== 0;
    if (partial && !mgr.hasAvailable(1)) return null;
    const child = new Sequence(row, this.tokens, this.root);
    const copies: BlockCopy[] = [];
    for (const [list, pool, name] of this.lists(mgr)) {
      const copy = list.shareInto(name === 'main' ? child.main : child.local, pool, name, full, partial);
      if (copy) copies.push(copy);
    }
    child.computed = this.computed;
    // Registered blocks are full ones (registered <= full), so the chain carries over.
    child.registered = this.registered;
    child.chain = this.chain;
    return { child, copies };
  }

  /** Drops every block (finished, aborted or preempted); the tokens stay for a recomputation. */
  releaseBlocks(mgr: KvBlockManager): void {
    for (const [list, pool] of this.lists(mgr)) list.release(pool);
    this.computed = 0;
    this.registered = 0;
    this.chain = this.root;
  }
}
