// The KV block manager and sequences without a GPU: reference counts, prefix hits by salt and
// adapter, LRU eviction of cached blocks, copy-on-write forks, rows.
import { describe, expect, it } from 'vitest';
import { chainKey, KvBlockManager, prefixRoot } from '../../../src/engine/model/kv/block-manager';
import { Sequence } from '../../../src/engine/generate/sequence';

const tokens = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => (i * 7 + seed) % 1000);

/** A sequence that prefilled `toks` (all computed) with its blocks registered. */
function prefilled(mgr: KvBlockManager, row: number, toks: number[], root = prefixRoot(undefined, null)): Sequence {
  const seq = new Sequence(row, toks, root);
  const m = mgr.match(root, toks, Math.floor((toks.length - 1) / 16));
  seq.adoptPrefix(mgr, m);
  expect(seq.reserve(mgr, toks.length)).toBe(true);
  seq.advance(mgr, toks.length - seq.computed);
  return seq;
}

describe('KvBlockManager', () => {
  it('counts references, frees unregistered blocks and keeps registered ones evictable', () => {
    const mgr = new KvBlockManager(8, 4);
    const a = prefilled(mgr, 0, tokens(40)); // 2 full blocks registered + 1 partial
    expect(a.blocks).toHaveLength(3);
    expect(mgr.available).toBe(5);
    expect(mgr.cachedBlocks).toBe(2);
    a.releaseBlocks(mgr);
    expect(mgr.available).toBe(8); // 5 free + 1 freed partial + 2 cached, unreferenced
    expect(mgr.cachedBlocks).toBe(2);
  });

  it('a repeated prompt reuses its full blocks (never the last token), other salts and adapters do not', () => {
    const mgr = new KvBlockManager(16, 4);
    const first = prefilled(mgr, 0, tokens(48));
    const root = prefixRoot(undefined, null);
    // 48 tokens = 3 full blocks, but the last token must be recomputed for its logits: 2 hit.
    expect(mgr.match(root, tokens(48), Math.floor(47 / 16)).blocks).toEqual(first.blocks.slice(0, 2));
    expect(mgr.match(prefixRoot('salt', null), tokens(48), 2).blocks).toEqual([]);
    expect(mgr.match(prefixRoot(undefined, 'checkpoint:1'), tokens(48), 2).blocks).toEqual([]);
    // A prompt that differs in block 1 shares block 0 only.
    const other = tokens(48);
    other[20] += 1;
    expect(mgr.match(root, other, 2).blocks).toEqual(first.blocks.slice(0, 1));
    const second = prefilled(mgr, 1, tokens(48));
    expect(second.blocks.slice(0, 2)).toEqual(first.blocks.slice(0, 2));
    expect(mgr.refCount(first.blocks[0])).toBe(2);
    expect(second.computed).toBe(48);
  });

  it('evicts the least recently released cached block when fresh blocks run out', () => {
    const mgr = new KvBlockManager(5, 4);
    const a = prefilled(mgr, 0, tokens(33, 1)); // a0 a1 (cached) + a partial block
    const b = prefilled(mgr, 1, tokens(17, 2)); // b0 (cached) + a partial block: all 5 in use
    expect(mgr.available).toBe(0);
    b.releaseBlocks(mgr); // b0 evictable, its partial block free
    a.releaseBlocks(mgr); // a0, a1 evictable (after b0), its partial block free
    expect(mgr.available).toBe(5);
    const fresh = [mgr.allocate()!, mgr.allocate()!, mgr.allocate()!];
    // Two free blocks first, then the oldest cached one (b0); a's prefix survives.
    expect(mgr.match(prefixRoot(undefined, null), tokens(17, 2), 1).blocks).toEqual([]);
    expect(mgr.match(prefixRoot(undefined, null), tokens(33, 1), 2).blocks).toHaveLength(2);
    expect(new Set(fresh).size).toBe(3);
  });

  it('forks share full blocks and copy the partial one; rows are handed out once', () => {
    const mgr = new KvBlockManager(10, 3);
    const parent = prefilled(mgr, mgr.allocRow()!, tokens(40));
    const fork = parent.fork(mgr, mgr.allocRow()!)!;
    expect(fork.child.blocks.slice(0, 2)).toEqual(parent.blocks.slice(0, 2));
    expect(fork.copies).toEqual([[parent.blocks[2], fork.child.blocks[2], 'main']]);
    expect(fork.child.blocks[2]).not.toBe(parent.blocks[2]);
    expect(mgr.refCount(parent.blocks[0])).toBe(2);
    expect(fork.child.computed).toBe(40);
    expect(mgr.rowsAvailable).toBe(1);
    // A fork on a block boundary has nothing to copy.
    const even = prefilled(mgr, mgr.allocRow()!, tokens(32, 5));
    expect(even.fork(mgr, 0)!.copies).toEqual([]);
    expect(() => mgr.freeRow(2)).not.toThrow();
    expect(() => mgr.freeRow(2)).toThrow(/twice/);
  });

  it('chain keys depend on every token and on the parent', () => {
    const k = chainKey('root', tokens(16));
    expect(chainKey('root', tokens(16))).toBe(k);
    const t = tokens(16);
    t[15]++;
    expect(chainKey('root', t)).not.toBe(k);
    expect(chainKey('root2', tokens(16))).not.toBe(k);
  });
});
