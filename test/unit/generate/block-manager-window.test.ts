// The KV block manager with a model-wide sliding window, without a GPU: a sequence decoded to 3x
// the window holds a bounded number of blocks (flat memory), the blocks it dropped stay valid
// prefix-cache entries until evicted, forks and releases never touch a dropped block twice, and the
// block table lists every live block where the kernels look for it.
import { describe, expect, it } from 'vitest';
import { KvBlockManager, prefixRoot } from '../../../src/engine/generate/block-manager';
import { DROPPED, Sequence } from '../../../src/engine/generate/sequence';
import { firstVisibleKey } from '../../../src/engine/model/attention-window';
import { KV_BLOCK } from '../../../src/engine/model/kv-cache';

const tokens = (n: number, seed = 0) => Array.from({ length: n }, (_, i) => (i * 7 + seed) % 1000);
const root = prefixRoot(undefined, null);

/** Runs `seq` one token per step (as decode does) until it has computed `to` tokens; returns the blocks held after each step. */
function decodeTo(mgr: KvBlockManager, seq: Sequence, to: number): number[] {
  const held: number[] = [];
  while (seq.computed < to) {
    expect(seq.reserve(mgr, seq.computed + 1)).toBe(true);
    seq.advance(mgr, 1);
    held.push(seq.liveBlocks);
  }
  return held;
}

describe('KvBlockManager with a sliding window', () => {
  it('a sequence at 3x the window holds the same few blocks as at 1x: memory is flat', () => {
    const window = 40;
    const mgr = new KvBlockManager(16, 2, window);
    const seq = new Sequence(0, tokens(3 * window + 1), root);
    const held = decodeTo(mgr, seq, 3 * window);
    // Never more than the window's blocks plus the block being written and one partly out of the window.
    const bound = Math.ceil(window / KV_BLOCK) + 1;
    expect(Math.max(...held)).toBeLessThanOrEqual(bound);
    expect(held[held.length - 1]).toBe(held[window + 2 * KV_BLOCK - 1]); // flat from about the window on
    expect(mgr.available + seq.liveBlocks).toBe(16);
    // Every block a next query at position `computed` sees is held; every one before it is dropped.
    const first = Math.floor(firstVisibleKey(seq.computed, window) / KV_BLOCK);
    seq.reserve(mgr, seq.computed + 1);
    seq.blocks.forEach((b, i) => expect(b === DROPPED).toBe(i < first));
    // A full-attention manager holds everything: the same run needs all 8 blocks.
    const fullMgr = new KvBlockManager(16, 2);
    const fullSeq = new Sequence(0, tokens(3 * window + 1), root);
    expect(Math.max(...decodeTo(fullMgr, fullSeq, 3 * window))).toBe(Math.ceil((3 * window) / KV_BLOCK));
  });

  it('dropped blocks stay prefix-cache entries until evicted; a new request reuses them', () => {
    const mgr = new KvBlockManager(12, 2, 20);
    const toks = tokens(80, 3);
    const a = new Sequence(0, toks, root);
    decodeTo(mgr, a, 80);
    expect(a.dropped).toBeGreaterThan(0);
    const m = mgr.match(root, toks, 4);
    expect(m.blocks).toHaveLength(4); // blocks 0..3, two of them dropped by `a`, still cached
    const b = new Sequence(1, toks, root);
    b.adoptPrefix(mgr, m.blocks, m.keys);
    expect(b.computed).toBe(64);
    // b's next reserve drops what its own window no longer sees, then everything is released once.
    expect(b.reserve(mgr, 65)).toBe(true);
    expect(b.dropped).toBe(Math.floor(firstVisibleKey(64, 20) / KV_BLOCK));
    a.releaseBlocks(mgr);
    b.releaseBlocks(mgr);
    expect(mgr.available).toBe(12);
  });

  it('forks share only live blocks; releasing both returns every block', () => {
    const mgr = new KvBlockManager(12, 3, 20);
    const parent = new Sequence(0, tokens(70), root);
    decodeTo(mgr, parent, 70);
    parent.reserve(mgr, 71);
    const fork = parent.fork(mgr, 1)!;
    expect(fork.child.dropped).toBe(parent.dropped);
    expect(fork.child.blocks.slice(0, parent.dropped).every((b) => b === DROPPED)).toBe(true);
    for (let i = parent.dropped; i < 4; i++) expect(mgr.refCount(parent.blocks[i])).toBe(2);
    parent.releaseBlocks(mgr);
    fork.child.releaseBlocks(mgr);
    expect(mgr.available).toBe(12);
  });

  it('a prompt longer than the cache is admitted with a window: it needs the window and a chunk', () => {
    const mgr = new KvBlockManager(12, 2, 32);
    expect(mgr.blocksToHold(1000, 64)).toBe(2 + 4 + 1);
    expect(new KvBlockManager(12, 2).blocksToHold(1000, 64)).toBe(Math.ceil(1000 / KV_BLOCK));
    expect(mgr.blocksToHold(20, 64)).toBe(2);
  });
});
