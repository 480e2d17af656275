/**
 * KvCache: the size arithmetic (budget and binding limit), buffer shapes, block-table writes and
 * the copy-on-write block copy, on the real GPU; and a hybrid model's local pool (its layers'
 * smaller buffers, its own block table, copies within its layers only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KvCache, kvBlockBytes, kvBlocksThatFit, kvBytesPerToken, type KvShape } from '../../src/engine/model/kv/kv-cache';
import { KV_BLOCK, packBatchRows } from '../../src/engine/kernels/kv-layout';
import { testConfig } from '../../src/engine/reference/random-model';
import { openGpu, readF32, Rng, type Gpu } from './attention-fixtures';
import { readU32 } from '../../src/engine/gpu/buffers';

let gpu: Gpu;
beforeAll(async () => {
  gpu = await openGpu();
});
afterAll(() => gpu?.device.destroy());

const SHAPE: KvShape = { numLayers: 3, numKvHeads: 2, headDim: 48 };

describe('KvCache sizing', () => {
  it('counts bytes per token and per block from the layout', () => {
    // K and V, every layer, every kv head, HS floats of 4 bytes.
    expect(kvBytesPerToken(SHAPE)).toBe(2 * 3 * 2 * 48 * 4);
    expect(kvBlockBytes(SHAPE)).toBe(2 * KV_BLOCK * 48 * 4);
    expect(kvBytesPerToken(SHAPE) * KV_BLOCK).toBe(2 * SHAPE.numLayers * kvBlockBytes(SHAPE));
  });

  it('fits the most blocks the budget allows, and no more than one binding holds', () => {
    const unlimited = { maxStorageBufferBindingSize: 2 ** 40, maxBufferSize: 2 ** 40 };
    for (const budget of [1e6, 12345678, 3e8]) {
      const n = kvBlocksThatFit(SHAPE, budget, unlimited);
      expect(n * KV_BLOCK * kvBytesPerToken(SHAPE)).toBeLessThanOrEqual(budget);
      expect((n + 1) * KV_BLOCK * kvBytesPerToken(SHAPE)).toBeGreaterThan(budget);
    }
    const binding = { maxStorageBufferBindingSize: 128 * 2 ** 20, maxBufferSize: 256 * 2 ** 20 };
    const n = kvBlocksThatFit(SHAPE, 1e12, binding);
    expect(n * kvBlockBytes(SHAPE)).toBeLessThanOrEqual(binding.maxStorageBufferBindingSize);
    expect((n + 1) * kvBlockBytes(SHAPE)).toBeGreaterThan(binding.maxStorageBufferBindingSize);
  });

  it('allocates per-layer K and V buffers and a block table from a model config and a budget', () => {
    const cfg = testConfig('qwen3', { numLayers: 2, numKvHeads: 2, headDim: 32 });
    const budget = 1 << 20;
    const cache = new KvCache(gpu.device, cfg, { maxSeqs: 5, maxContext: 100, memoryBudgetBytes: budget });
    expect(cache.k).toHaveLength(2);
    expect(cache.v).toHaveLength(2);
    expect(cache.numBlocks).toBe(kvBlocksThatFit(cache.shape, budget, gpu.device.limits));
    expect(cache.k[0].size).toBe(cache.numBlocks * cfg.numKvHeads * KV_BLOCK * cfg.headDim * 4);
    expect(cache.maxBlocksPerSeq).toBe(Math.ceil(100 / KV_BLOCK));
    expect(cache.blockTable.size).toBe(5 * cache.maxBlocksPerSeq * 4);
    expect(cache.bytes - cache.blockTable.size).toBeLessThanOrEqual(budget);
    expect(cache.capacityTokens).toBe(cache.numBlocks * KV_BLOCK);
    cache.destroy();
  });

  it('refuses more blocks than one binding holds, and a budget below one block', () => {
    const limit = gpu.device.limits.maxStorageBufferBindingSize;
    const tooMany = Math.floor(limit / kvBlockBytes(SHAPE)) + 1;
    expect(() => new KvCache(gpu.device, SHAPE, { maxSeqs: 1, maxContext: 16, numBlocks: tooMany })).toThrow(/binding limit/);
    expect(() => new KvCache(gpu.device, SHAPE, { maxSeqs: 1, maxContext: 16, memoryBudgetBytes: 100 })).toThrow(/holds no block/);
  });
});

describe('KvCache on the GPU', () => {
  it('writes block-table rows and refuses out-of-range blocks and rows', async () => {
    const cache = new KvCache(gpu.device, SHAPE, { maxSeqs: 3, maxContext: 64, numBlocks: 10 });
    cache.writeBlockTable(1, [7, 2, 9]);
    cache.writeBlockTable(1, [4], 3);
    cache.writeBlockTable(2, [0]);
    const table = await readU32(gpu.device, cache.blockTable, 3 * 4);
    expect(Array.from(table.subarray(4, 8))).toEqual([7, 2, 9, 4]);
    expect(table[8]).toBe(0);
    expect(() => cache.writeBlockTable(1, [10])).toThrow(/block 10/);
    expect(() => cache.writeBlockTable(3, [1])).toThrow(/row 3/);
    expect(() => cache.writeBlockTable(0, [1, 2, 3, 4, 5])).toThrow(/maxBlocksPerSeq/);
    cache.destroy();
  });

  it('copies whole blocks in every layer, K and V, leaving the rest untouched (copy-on-write)', async () => {
    const { device } = gpu;
    const rng = new Rng(5);
    const cache = new KvCache(device, SHAPE, { maxSeqs: 2, maxContext: 64, numBlocks: 6 });
    const floats = (cache.numBlocks * cache.blockBytes) / 4;
    const before = [...cache.k, ...cache.v].map((buf) => {
      const data = rng.normals(floats);
      device.queue.writeBuffer(buf, 0, data);
      return data;
    });
    const pairs: Array<[number, number]> = [
      [4, 1],
      [0, 5],
      [1, 3], // a chain: block 3 gets block 1 after 1 was overwritten by 4, as commands run in order
    ];
    const encoder = device.createCommandEncoder();
    cache.recordCopyBlocks(encoder, pairs);
    device.queue.submit([encoder.finish()]);
    const per = cache.blockBytes / 4;
    const buffers = [...cache.k, ...cache.v];
    for (let i = 0; i < buffers.length; i++) {
      const want = before[i].slice();
      for (const [src, dst] of pairs) want.copyWithin(dst * per, src * per, (src + 1) * per);
      const got = await readF32(device, buffers[i], floats);
      expect(Array.from(got)).toEqual(Array.from(want));
    }
    expect(() => cache.recordCopyBlocks(device.createCommandEncoder(), [[0, 6]])).toThrow(/out of/);
    cache.destroy();
  });

  it("a local pool: its layers' buffers hold its blocks, its table is theirs, its copies touch only them", async () => {
    const { device } = gpu;
    const rng = new Rng(7);
    const cache = new KvCache(device, SHAPE, { maxSeqs: 2, maxContext: 64, numBlocks: 6, local: { layers: [0, 2], numBlocks: 3 } });
    expect(cache.k.map((b) => b.size / cache.blockBytes)).toEqual([3, 6, 3]);
    expect([cache.poolOf(0), cache.poolOf(1), cache.poolOf(2)]).toEqual(['local', 'main', 'local']);
    expect([cache.tableOf(0), cache.tableOf(1), cache.tableOf(2)]).toEqual([
      cache.localBlockTable,
      cache.blockTable,
      cache.localBlockTable,
    ]);
    expect(cache.bytes).toBe(2 * (3 + 6 + 3) * cache.blockBytes + 2 * cache.blockTable.size);
    cache.writeBlockTable(1, [2, 0], 0, 'local');
    cache.writeBlockTable(1, [5, 4], 0, 'main');
    expect(Array.from((await readU32(device, cache.localBlockTable!, 8)).subarray(4, 6))).toEqual([2, 0]);
    expect(Array.from((await readU32(device, cache.blockTable, 8)).subarray(4, 6))).toEqual([5, 4]);
    expect(() => cache.writeBlockTable(0, [3], 0, 'local')).toThrow(/local block 3/);
    const buffers = [...cache.k, ...cache.v];
    const before = buffers.map((buf) => {
      const data = rng.normals(buf.size / 4);
      device.queue.writeBuffer(buf, 0, data);
      return data;
    });
    const copies = [[2, 0, 'local'] as const, [5, 1] as const];
    const encoder = device.createCommandEncoder();
    cache.recordCopyBlocks(encoder, copies);
    device.queue.submit([encoder.finish()]);
    const per = cache.blockBytes / 4;
    for (let i = 0; i < buffers.length; i++) {
      const want = before[i].slice();
      const [src, dst] = cache.poolOf(i % 3) === 'local' ? copies[0] : copies[1];
      want.copyWithin(dst * per, src * per, (src + 1) * per);
      expect(Array.from(await readF32(device, buffers[i], want.length))).toEqual(Array.from(want));
    }
    expect(() => cache.recordCopyBlocks(device.createCommandEncoder(), [[1, 3, 'local']])).toThrow(/local pool/);
    expect(
      () => new KvCache(device, SHAPE, { maxSeqs: 1, maxContext: 16, numBlocks: 4, local: { layers: [0, 1, 2], numBlocks: 2 } }),
    ).toThrow(/some, not all/);
    cache.destroy();
  });

  it('packs batch rows as 4 x u32 in WGSL field order', () => {
    const packed = packBatchRows([
      { seq: 3, pos: 17, adapter: 0xffffffff, count: 1 },
      { seq: 0, pos: 0, adapter: 2, count: 40 },
    ]);
    expect(Array.from(packed)).toEqual([3, 17, 0xffffffff, 1, 0, 0, 2, 40]);
  });
});
