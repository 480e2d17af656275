// Shared set-up of the generation-core GPU tests: a random test model on the GPU with its reference
// twin, a ModelRunner over a KvCache whose block-table rows own fixed shuffled blocks, and greedy
// sampling helpers. The runner is driven directly here; the engine tests go through Engine.
import { readF32 } from '../../src/engine/gpu/buffers';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { ModelRunner } from '../../src/engine/generate/model-runner';
import { createDenseKernels, type DenseKernels } from '../../src/engine/kernels/registry';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { KvCache } from '../../src/engine/model/kv/kv-cache';
import { KV_BLOCK } from '../../src/engine/kernels/kv-layout';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { ReferenceModel } from '../../src/engine/reference/model';
import { Rng } from '../../src/engine/tensor/random';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import type { DecodeGraphChoice } from '../../src/engine/generate/decode-graph';

export interface RunnerFixture {
  cfg: ModelConfig;
  tensors: TensorData[];
  weights: WeightSet;
  ref: ReferenceModel;
  kv: KvCache;
  runner: ModelRunner;
  /** Blocks of each block-table row (fixed, shuffled). */
  blocks: number[][];
  destroy(): void;
}

let context: Promise<KernelContext> | null = null;

/** The engine's context on this machine: 64-invocation GEMV workgroups on SwiftShader (engine.ts). */
export function generateContext(): Promise<KernelContext> {
  context ??= nodeGpu()
    .then((g) => acquireGpu(g))
    .then((gpu) => createKernelContext(gpu, { gemvWorkgroupSize: gpu.description.adapter.isSoftware ? 64 : undefined }));
  return context;
}

export async function destroyGenerateContext(): Promise<void> {
  if (context) (await context).device.destroy();
  context = null;
}

export async function runnerFixture(
  ctx: KernelContext,
  arch: Architecture,
  dtype: DType,
  seed: number,
  opts: {
    maxSeqs?: number;
    maxContext?: number;
    overrides?: Partial<ModelConfig>;
    maxTokens?: number;
    fusedMaxBatch?: number;
    /** Which graph decodes (default 'auto': the general graph for Gemma 3's sandwich norms). */
    decodeGraph?: DecodeGraphChoice;
    /** DecodeMlp's slice width (default 128). */
    mlpSlice?: number;
    /** A model of its own (e.g. a Gemma 3 checkpoint parsed from its config format) instead of testConfig's. */
    model?: { cfg: ModelConfig; tensors: TensorData[] };
    /** Replaces some of the dense kernels (e.g. a DecodeOProj with a small merge buffer). */
    dense?: Partial<DenseKernels>;
  } = {},
): Promise<RunnerFixture> {
  const cfg = opts.model?.cfg ?? testConfig(arch, opts.overrides);
  const tensors = opts.model?.tensors ?? randomModelTensors(cfg, dtype, seed);
  const maxContext = opts.maxContext ?? 128;
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: maxContext });
  const maxSeqs = opts.maxSeqs ?? 6;
  const perSeq = Math.ceil(maxContext / KV_BLOCK);
  const kv = new KvCache(ctx.device, cfg, { maxSeqs, maxContext, numBlocks: maxSeqs * perSeq });
  const rng = new Rng(seed + 1);
  const all = Array.from({ length: kv.numBlocks }, (_, i) => i);
  for (let i = all.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [all[i], all[j]] = [all[j], all[i]];
  }
  const blocks = Array.from({ length: maxSeqs }, (_, r) => all.slice(r * perSeq, (r + 1) * perSeq));
  blocks.forEach((b, r) => kv.writeBlockTable(r, b));
  const runner = new ModelRunner(ctx, weights, kv, {
    dense: { ...createDenseKernels(ctx), ...opts.dense },
    maxTokens: opts.maxTokens ?? 128,
    fusedMaxBatch: opts.fusedMaxBatch,
    decodeGraph: opts.decodeGraph,
    mlpSlice: opts.mlpSlice,
    samplerWorkgroupSize: 32,
  });
  return {
    cfg,
    tensors,
    weights,
    ref: new ReferenceModel(cfg, tensors),
    kv,
    runner,
    blocks,
    destroy() {
      runner.destroy();
      kv.destroy();
      weights.destroy();
    },
  };
}

/** The logits rows the last step computed (R rows of V). */
export async function lastLogits(f: RunnerFixture, R: number): Promise<Float32Array> {
  return readF32(f.runner.ctx.device, f.runner.step.logits, R * f.cfg.vocabSize);
}

export function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

export function randomTokens(rng: Rng, n: number, V: number): number[] {
  return Array.from({ length: n }, () => 1 + rng.int(V - 1));
}
