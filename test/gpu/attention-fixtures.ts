/**
 * Fixtures of the attention-family GPU tests: a device, and random paged layouts. A layout gives
 * each sequence a block-table row and blocks drawn in shuffled order from a pool (so no sequence
 * owns contiguous blocks), which is how the KV block manager will hand them out after churn. The
 * allocator here is a test's minimal one: no ref counts, no prefix hashing.
 */
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { readF32, uploadStorage } from '../../src/engine/gpu/buffers';
import type { DecodeAttention, DecodeSplitPlan } from '../../src/engine/kernels/attention-decode';
import type { AttentionMerge } from '../../src/engine/kernels/attention-merge';
import { KV_BLOCK, NO_ADAPTER, packBatchRows, type BatchRow } from '../../src/engine/kernels/kv-layout';
import type { PagedKv } from '../../src/engine/reference/attention-paged';
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { Rng } from '../../src/engine/tensor/random';
import { phi3TestRope } from '../../src/engine/reference/random-model';

export type Gpu = KernelContext;

export async function openGpu(): Promise<Gpu> {
  return createKernelContext(await acquireGpu(await nodeGpu()));
}

/** Calls `make` (pipeline creation, for instance) and fails on any validation error it raised. */
export async function checked<T>(device: GPUDevice, make: () => T): Promise<T> {
  device.pushErrorScope('validation');
  const value = make();
  const err = await device.popErrorScope();
  if (err) throw new Error(`WebGPU validation: ${err.message}`);
  return value;
}

/** A random paged layout: per sequence its length (context it must hold) and shuffled blocks. */
export interface Layout {
  kv: PagedKv;
  /** Block-table row of each sequence (rows are also shuffled, and spare rows exist). */
  seqRow: number[];
  numBlocks: number;
  maxSeqs: number;
}

/**
 * Gives each sequence ceil(len / 16) blocks taken from a shuffled pool of `numBlocks` (default: all
 * needed plus 3 spare), block-table rows shuffled among `seqLens.length + 2`. K and V start random
 * (stale data of earlier sequences), so a kernel that reads a wrong block fails loudly.
 */
export function makeLayout(rng: Rng, seqLens: number[], NKV: number, HS: number, maxContext?: number): Layout {
  const need = seqLens.map((n) => Math.ceil(n / KV_BLOCK));
  const numBlocks = need.reduce((a, b) => a + b, 0) + 3;
  const maxBlocksPerSeq = Math.ceil((maxContext ?? Math.max(...seqLens)) / KV_BLOCK) + 1;
  const maxSeqs = seqLens.length + 2;
  const pool = shuffled(rng, numBlocks);
  const rowsPool = shuffled(rng, maxSeqs);
  const blockTable = new Uint32Array(maxSeqs * maxBlocksPerSeq).fill(0xdeadbeef);
  const seqRow: number[] = [];
  let next = 0;
  seqLens.forEach((_, s) => {
    const row = rowsPool[s];
    seqRow.push(row);
    for (let i = 0; i < need[s]; i++) blockTable[row * maxBlocksPerSeq + i] = pool[next++];
  });
  const size = numBlocks * NKV * KV_BLOCK * HS;
  return {
    kv: { k: rng.normals(size), v: rng.normals(size), blockTable, maxBlocksPerSeq, NKV, HS },
    seqRow,
    numBlocks,
    maxSeqs,
  };
}

export function shuffled(rng: Rng, n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

export function batchRows(layout: Layout, parts: ReadonlyArray<{ seq: number; pos: number; count: number }>): BatchRow[] {
  return parts.map((p) => ({ seq: layout.seqRow[p.seq], pos: p.pos, adapter: NO_ADAPTER, count: p.count }));
}

/** The layout's K, V and block table on the GPU. */
export interface GpuKv {
  k: GPUBuffer;
  v: GPUBuffer;
  blockTable: GPUBuffer;
}

export function uploadKv(device: GPUDevice, kv: PagedKv): GpuKv {
  return {
    k: uploadStorage(device, kv.k, 'test.k'),
    v: uploadStorage(device, kv.v, 'test.v'),
    blockTable: uploadStorage(device, kv.blockTable, 'test.blockTable'),
  };
}

export function uploadRows(device: GPUDevice, rows: readonly BatchRow[]): GPUBuffer {
  return uploadStorage(device, packBatchRows(rows), 'test.rows');
}

export { readF32, runCalls, uploadStorage, Rng };

/** A qkv-prep case whose RoPE is not Llama's: its rope config overrides, and false on a NoPE layer. */
export interface RopeVariantCase {
  name: string;
  NH: number;
  NKV: number;
  HS: number;
  norm: DType | null;
  /** Per sequence: cached prefix length and new tokens in this batch. */
  rows: Array<{ pos: number; count: number }>;
  rope: Partial<ModelConfig> & { layerRope?: boolean };
}

/** Phi-3 (partial rotary, LongRoPE switching at 24 inside the batch) and a SmolLM3 NoPE layer, for qkv-prep forward and backward. */
export const ROPE_VARIANT_CASES: RopeVariantCase[] = [
  {
    name: 'Phi-3: partial rotary (24 of 32 dims), LongRoPE across its switch at 24, GQA 2',
    NH: 4,
    NKV: 2,
    HS: 32,
    norm: null,
    rows: [
      { pos: 20, count: 9 },
      { pos: 0, count: 5 },
    ],
    rope: phi3TestRope(32),
  },
  {
    name: 'SmolLM3 NoPE layer: q and k not rotated, q/k norm f32',
    NH: 4,
    NKV: 2,
    HS: 16,
    norm: 'f32',
    rows: [{ pos: 3, count: 6 }],
    rope: { layerRope: false },
  },
];

export interface SplitDecodeArgs {
  q: GPUBuffer;
  kv: GpuKv;
  rows: GPUBuffer;
  B: number;
  NH: number;
  HS: number;
  maxBlocksPerSeq: number;
  plan: DecodeSplitPlan;
  window?: number;
}

/**
 * One split-K decode attention and its merge over `plan`, as a decode step records them: the
 * partials start as random garbage the kernel must overwrite. Returns the partials and the merged
 * (B, NH, HS) output, read back.
 */
export async function runSplitDecode(
  gpu: Gpu,
  decode: DecodeAttention,
  merge: AttentionMerge,
  rng: Rng,
  a: SplitDecodeArgs,
): Promise<{ partials: Float32Array; out: Float32Array }> {
  const { device } = gpu;
  const floats = a.B * a.NH * a.plan.numSplits * (a.HS + 2);
  const partials = uploadStorage(device, rng.normals(floats), 'partials');
  const out = uploadStorage(device, new Float32Array(a.B * a.NH * a.HS), 'out');
  await runCalls(gpu, [
    ...decode.encode({
      partials,
      q: a.q,
      ...a.kv,
      rows: a.rows,
      B: a.B,
      maxBlocksPerSeq: a.maxBlocksPerSeq,
      plan: a.plan,
      window: a.window,
    }),
    ...merge.encode({ out, partials, B: a.B, NH: a.NH, HS: a.HS, numSplits: a.plan.numSplits }),
  ]);
  const result = { partials: await readF32(device, partials, floats), out: await readF32(device, out, a.B * a.NH * a.HS) };
  partials.destroy();
  out.destroy();
  return result;
}
