// The KV block manager with a model-wide sliding window, without a GPU: a sequence decoded to 3x
// the window holds a bounded number of blocks (flat memory), the blocks it dropped stay valid
// prefix-cache entries until evicted, forks and releases never touch a dropped block twice, and the
// block table lists every live block where the kernels look for it.
// Hybrid models (a local pool for the sliding layers beside the full-attention layers' pool): the
// local pool stays flat while the main one grows, admission counts both, a prefix hit needs the
// local blocks of its window and shrinks when they were evicted, forks copy in both pools, and the
// memory plan sizes the local pool from the window (Gemma 3 270M's own config).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KvBlockManager, prefixRoot } from '../../../src/engine/model/kv/block-manager';
import { validateRequest } from '../../../src/engine/generate/request-state';
import { DROPPED, Sequence } from '../../../src/engine/generate/sequence';
import { firstVisibleKey, hybridWindow, localLayers } from '../../../src/engine/model/config/attention-window';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { kvBlockBytes, kvBlocksThatFit, kvShapeOf } from '../../../src/engine/model/kv/kv-cache';
import { KV_BLOCK } from '../../../src/engine/kernels/kv-layout';
import { localBlocksWanted, planKvPools } from '../../../src/engine/model/kv/kv-pools';

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
    b.adoptPrefix(mgr, m);
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

/** A hybrid model's managers: `main` blocks for the full-attention layers, `local` for the sliding ones. */
const hybrid = (main: number, local: number, window: number, rows = 4) =>
  new KvBlockManager(main, rows, 0, new KvBlockManager(local, 0, window));

describe('KvBlockManager for a hybrid model (local pool for the sliding layers)', () => {
  it('at 3x the window the local pool holds the window while the main pool holds every block', () => {
    const window = 40;
    const mgr = hybrid(16, 8, window);
    const seq = new Sequence(0, tokens(3 * window + 1), root);
    const local: number[] = [];
    const main = decodeTo(mgr, seq, 3 * window).map((held) => {
      local.push(seq.local.live);
      return held;
    });
    expect(Math.max(...local)).toBeLessThanOrEqual(Math.ceil(window / KV_BLOCK) + 1);
    expect(local[local.length - 1]).toBe(local[window + 2 * KV_BLOCK - 1]); // flat
    expect(main[main.length - 1]).toBe(Math.ceil((3 * window) / KV_BLOCK)); // grows with the context
    expect(mgr.local!.available + seq.local.live).toBe(8);
    // The local entries a next query sees are held, those before are dropped; main entries never are.
    seq.reserve(mgr, seq.computed + 1);
    const first = Math.floor(firstVisibleKey(seq.computed, window) / KV_BLOCK);
    seq.local.blocks.forEach((b, i) => expect(b === DROPPED).toBe(i < first));
    expect(seq.blocks.every((b) => b !== DROPPED)).toBe(true);
    seq.releaseBlocks(mgr);
    expect([mgr.available, mgr.local!.available]).toEqual([16, 8]);
  });

  it('a step that one pool cannot hold takes nothing from the other; admission counts both pools', () => {
    const mgr = hybrid(16, 3, 20);
    const a = new Sequence(0, tokens(100), root);
    expect(a.reserve(mgr, 48)).toBe(true); // 3 blocks in each pool: the local pool is full
    expect(a.reserve(mgr, 64)).toBe(false);
    expect([mgr.available, mgr.local!.available]).toEqual([13, 0]);
    const none = { blocks: [], keys: [], local: [] };
    expect(mgr.admits(20, 16, none, 0, 0)).toBe(false); // the main pool has room, the local one none
    a.releaseBlocks(mgr);
    expect(mgr.admits(20, 16, none, 0, 0)).toBe(true);
    // A recomputation takes its full-attention blocks at once and its local ones chunk by chunk.
    const again = new Sequence(1, tokens(100), root);
    expect(again.reserve(mgr, 32, 101)).toBe(true);
    expect([again.main.live, again.local.live]).toEqual([7, 2]);
    again.releaseBlocks(mgr);
    // Request validation: a context the main pool holds but the local pool cannot hold a window of.
    const limits = {
      maxModelLen: 1000,
      vocabSize: 1000,
      maxSeqs: 4,
      numBlocks: 64,
      seqBlocks: (t: number) => mgr.blocksToHold(t, 32),
      localPool: { numBlocks: 3, seqBlocks: (t: number) => mgr.local!.blocksToHold(t, 32) },
    };
    const req = (P: number) => ({
      model: 'm',
      adapter: null,
      promptTokenIds: tokens(P),
      n: 1,
      sampling: [{}],
      maxTokens: 1,
      promptLogprobs: null,
      badWords: [],
    });
    expect(() => validateRequest(req(30), limits)).not.toThrow();
    expect(() => validateRequest(req(300), limits)).toThrow(/sliding-window layers; they hold 48/);
  });

  it('a prefix hit reuses local blocks inside its window only, and is recomputed once they are evicted', () => {
    const mgr = hybrid(16, 6, 20);
    const toks = tokens(80, 3);
    const a = new Sequence(0, toks, root);
    decodeTo(mgr, a, 80);
    a.releaseBlocks(mgr);
    // Logical blocks 0 .. 4 are cached in both pools; evicting local block 0 (the oldest) leaves
    // the window of the 4-block prefix (blocks 2, 3) whole.
    const other = new Sequence(1, tokens(64, 500), prefixRoot('x', null));
    expect(other.reserve(mgr, 32)).toBe(true);
    const hit = mgr.match(root, toks, 4);
    expect(hit.blocks).toHaveLength(4);
    expect(hit.local.map((b) => b === DROPPED)).toEqual([true, true, false, false]);
    const b = new Sequence(2, toks, root);
    b.adoptPrefix(mgr, hit);
    expect([b.computed, b.local.dropped, b.local.live]).toEqual([64, 2, 2]);
    decodeTo(mgr, b, 70);
    b.releaseBlocks(mgr);
    // Taking every local block evicts all of the prefix's: the main pool still caches its blocks,
    // but no prefix has its window in the local pool, so nothing is reused.
    expect(other.reserve(mgr, 96)).toBe(true);
    expect(mgr.local!.available).toBe(0);
    expect(mgr.match(root, toks, 4).blocks).toHaveLength(0);
    expect(mgr.cachedBlocks).toBeGreaterThanOrEqual(5);
    expect(mgr.local!.cachedBlocks).toBe(0);
    other.releaseBlocks(mgr);
    expect([mgr.available, mgr.local!.available]).toEqual([16, 6]);
  });

  it('a prefix hit is shortened to the longest prefix whose window the local pool still holds', () => {
    const mgr = hybrid(16, 6, 20);
    const toks = tokens(80, 3);
    const a = new Sequence(0, toks, root);
    decodeTo(mgr, a, 80);
    a.releaseBlocks(mgr);
    // A shorter request sharing the first 2 blocks touches their local blocks (now the newest in
    // the LRU list); then 4 fresh local blocks evict the other cached ones (2, 3, 4).
    const s = new Sequence(1, [...toks.slice(0, 32), ...tokens(20, 900)], root);
    s.adoptPrefix(mgr, mgr.match(root, s.tokens, 3));
    expect([s.computed, s.local.live]).toEqual([32, 2]);
    expect(s.reserve(mgr, 52)).toBe(true);
    s.releaseBlocks(mgr);
    const other = new Sequence(2, tokens(64, 500), prefixRoot('x', null));
    expect(other.reserve(mgr, 64)).toBe(true);
    // The main pool holds all 4 blocks of `a`'s prefix, but the local pool only blocks 0 and 1: the
    // 4- and 3-block prefixes lack their window (blocks 2, 3 and 1, 2), the 2-block one has it.
    const hit = mgr.match(root, toks, 4);
    expect(hit.blocks).toHaveLength(2);
    expect(hit.local).toHaveLength(2);
    expect(hit.local.every((b) => b !== DROPPED)).toBe(true);
    other.releaseBlocks(mgr);
    const b = new Sequence(3, toks, root);
    b.adoptPrefix(mgr, hit);
    decodeTo(mgr, b, 40);
    b.releaseBlocks(mgr);
    expect([mgr.available, mgr.local!.available]).toEqual([16, 6]);
  });

  it("forks share both pools' full blocks and copy the partial block in each", () => {
    const mgr = hybrid(16, 8, 20);
    const parent = new Sequence(0, tokens(70), root);
    decodeTo(mgr, parent, 70);
    parent.reserve(mgr, 71);
    const fork = parent.fork(mgr, 1)!;
    expect(fork.copies).toEqual([
      [parent.blocks[4], fork.child.blocks[4], 'main'],
      [parent.local.blocks[4], fork.child.local.blocks[4], 'local'],
    ]);
    expect(fork.child.local.dropped).toBe(parent.local.dropped);
    for (let i = parent.local.dropped; i < 4; i++) expect(mgr.local!.refCount(parent.local.blocks[i])).toBe(2);
    parent.releaseBlocks(mgr);
    fork.child.releaseBlocks(mgr);
    expect([mgr.available, mgr.local!.available]).toEqual([16, 8]);
  });

  it('the memory plan: Gemma 3 270M gives its 15 sliding layers a window per sequence and the rest to its 3 global layers', () => {
    const cfg = parseModelConfig(JSON.parse(readFileSync(new URL('../model/fixtures/gemma-3-270m.config.json', import.meta.url), 'utf8')));
    expect([hybridWindow(cfg), localLayers(cfg).length]).toEqual([512, 15]);
    const limits = { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 31 };
    const budget = 1024 * 2 ** 20;
    const opts = { budgetBytes: budget, maxSeqs: 4, prefillChunk: 512 };
    const plan = planKvPools(cfg, opts, limits);
    const uniform = kvBlocksThatFit(kvShapeOf(cfg), budget, limits);
    expect(plan.local).toEqual({ layers: localLayers(cfg), numBlocks: localBlocksWanted(512, 4, 512), window: 512 });
    // Within the budget, and the global layers' context grows about 6x against one pool for all.
    const bytes = 2 * kvBlockBytes(kvShapeOf(cfg)) * (15 * plan.local!.numBlocks + 3 * plan.numBlocks);
    expect(bytes).toBeLessThanOrEqual(budget);
    expect(plan.numBlocks).toBeGreaterThan(5 * uniform);
    // A budget too small for a window per sequence: both pools get the uniform split.
    expect(planKvPools(cfg, { ...opts, maxSeqs: 64 }, limits)).toMatchObject({ numBlocks: uniform, local: { numBlocks: uniform } });
    // Models that are not hybrid keep one pool.
    expect(planKvPools({ ...cfg, layerTypes: cfg.layerTypes.map(() => 'full_attention' as const) }, opts, limits).local).toBeNull();
  });
});
