/**
 * Sequence: one row of the KV cache's block table and the tokens behind it: a prompt being
 * prefilled, a choice being decoded, or a beam. It tracks which of its tokens are in the cache
 * (`computed`), its blocks and how many of them the GPU block table already lists, and the prefix
 * chain of its full blocks, which it registers in the prefix cache as they fill. With a model-wide
 * sliding window (KvBlockManager.window) it drops the blocks no later query can see, keeping their
 * places in `blocks` as DROPPED so block i still holds positions 16 i .. 16 i + 15.
 *
 * Not here: ownership rules (block-manager.ts), scheduling (scheduler.ts).
 */
import { firstVisibleKey } from '../model/attention-window';
import { KV_BLOCK, type KvCache } from '../model/kv-cache';
import type { KvBlockManager } from './block-manager';

/** A `blocks` entry whose block was released because it lies wholly before the window. */
export const DROPPED = -1;

export class Sequence {
  /** Every token of the sequence: prompt, then output. */
  readonly tokens: number[];
  /** Blocks holding positions 0 .. blocks.length * KV_BLOCK - 1 (DROPPED before the window). */
  blocks: number[] = [];
  /** Leading entries of `blocks` that are DROPPED. */
  dropped = 0;
  /** Tokens whose K/V are in the cache (positions 0 .. computed - 1). */
  computed = 0;
  /** Leading blocks registered in the prefix cache, and the chain key of the last one. */
  registered = 0;
  chain: string;
  /** Block-table entries of `row` already written to the GPU. */
  private written = 0;

  constructor(
    readonly row: number,
    tokens: readonly number[],
    /** Prefix-chain root: the cache salt and adapter (block-manager.ts prefixRoot). */
    readonly root: string,
  ) {
    this.tokens = tokens.slice();
    this.chain = root;
  }

  get length(): number {
    return this.tokens.length;
  }

  /** Takes cached prefix blocks (already matched): the first blocks.length * KV_BLOCK tokens are computed. */
  adoptPrefix(mgr: KvBlockManager, blocks: readonly number[], keys: readonly string[]): void {
    if (this.blocks.length !== 0) throw new Error('Sequence: a prefix can only be adopted by an empty sequence');
    for (const b of blocks) mgr.acquire(b);
    this.blocks = blocks.slice();
    this.computed = blocks.length * KV_BLOCK;
    this.registered = blocks.length;
    this.chain = keys.length > 0 ? keys[keys.length - 1] : this.root;
    this.written = 0;
  }

  /** Blocks missing to hold `tokens` positions. */
  blocksNeeded(tokens: number): number {
    return Math.max(0, Math.ceil(tokens / KV_BLOCK) - this.blocks.length);
  }

  /** Blocks this sequence holds (references it owns). */
  get liveBlocks(): number {
    return this.blocks.length - this.dropped;
  }

  /**
   * Releases the blocks that lie wholly before the window of the next query (position `computed`):
   * no query of this or a later step reads them. Called as the next step is planned, so the step
   * that last read them was submitted before they can be handed out again (queue order). Only
   * registered blocks are dropped, so the prefix chain stays whole.
   */
  dropOutOfWindow(mgr: KvBlockManager): void {
    if (mgr.window === 0) return;
    const dead = Math.min(Math.floor(firstVisibleKey(this.computed, mgr.window) / KV_BLOCK), this.registered);
    for (; this.dropped < dead; this.dropped++) {
      mgr.release(this.blocks[this.dropped]);
      this.blocks[this.dropped] = DROPPED;
    }
  }

  /**
   * Grows the block list to hold `tokens` positions, after dropping the blocks behind the window;
   * false (nothing taken) when blocks run out.
   */
  reserve(mgr: KvBlockManager, tokens: number): boolean {
    this.dropOutOfWindow(mgr);
    const need = this.blocksNeeded(tokens);
    if (need === 0) return true;
    if (need > mgr.available) return false;
    for (let i = 0; i < need; i++) this.blocks.push(mgr.allocate()!);
    return true;
  }

  /**
   * Writes the block-table entries the GPU does not have yet (queue-ordered before the next submit).
   * A DROPPED entry is written as block 0: the kernels never read a position before the window.
   */
  syncTable(kv: KvCache): void {
    if (this.written < this.blocks.length) {
      kv.writeBlockTable(
        this.row,
        this.blocks.slice(this.written).map((b) => (b === DROPPED ? 0 : b)),
        this.written,
      );
      this.written = this.blocks.length;
    }
  }

  /** Marks `count` more tokens as computed (a submitted step wrote them) and registers full blocks. */
  advance(mgr: KvBlockManager, count: number): void {
    this.computed += count;
    const full = Math.min(Math.floor(this.computed / KV_BLOCK), Math.floor(this.tokens.length / KV_BLOCK));
    while (this.registered < full) {
      const i = this.registered;
      this.chain = mgr.register(this.blocks[i], this.chain, this.tokens.slice(i * KV_BLOCK, (i + 1) * KV_BLOCK));
      this.registered++;
    }
  }

  /**
   * A copy on another row sharing every full block and a fresh copy of the partial last block
   * (copy-on-write when choices or beams fork). Returns the child and the [src, dst] block copy to
   * record, or null when no block is free for the copy.
   */
  fork(mgr: KvBlockManager, row: number): { child: Sequence; copy: [number, number] | null } | null {
    const child = new Sequence(row, this.tokens, this.root);
    const fullBlocks = Math.floor(this.computed / KV_BLOCK);
    const partial = this.computed % KV_BLOCK !== 0 ? this.blocks[fullBlocks] : undefined;
    let copy: [number, number] | null = null;
    if (partial !== undefined) {
      const dst = mgr.allocate();
      if (dst === null) return null;
      copy = [partial, dst];
    }
    for (let i = this.dropped; i < fullBlocks; i++) mgr.acquire(this.blocks[i]);
    child.blocks = this.blocks.slice(0, fullBlocks);
    child.dropped = Math.min(this.dropped, fullBlocks);
    if (copy) child.blocks.push(copy[1]);
    child.computed = this.computed;
    // Registered blocks are full ones (registered <= fullBlocks), so the chain carries over.
    child.registered = this.registered;
    child.chain = this.chain;
    return { child, copy };
  }

  /** Drops every block (finished, aborted or preempted); the tokens stay for a recomputation. */
  releaseBlocks(mgr: KvBlockManager): void {
    mgr.releaseAll(this.blocks.slice(this.dropped));
    this.blocks = [];
    this.dropped = 0;
    this.computed = 0;
    this.registered = 0;
    this.chain = this.root;
    this.written = 0;
  }
}
