/**
 * The generation section of `npm run bench`, through the real Engine (scheduler, runner, sampler):
 *   - time to first token and prefill tokens/s of a P-token prompt (default 512) in one request;
 *   - decode tokens/s at batch 1 and batch 8 (B requests decoding together, steady state: from the
 *     moment every request has its first token to the last token);
 *   - GPU memory (the sum of the engine's buffers: WebGPU has no memory query): weights, KV cache,
 *     step buffers;
 *   - device-independent figures of the decode step: dispatches per layer (and per step), command
 *     submissions per step (profiler counters), bytes read back per sequence per step;
 *   - on a known GPU, the fraction of the memory-bandwidth limit the batch-1 decode reaches
 *     (weights bytes per token / bandwidth = the fastest possible step);
 *   - with `loraRank`, decode again at each batch with every request under one LoRA adapter of that
 *     rank on every projection (random weights): an RL rollout sampling from its current checkpoint.
 *     Beside its figures, the dispatches per layer of the general graph, which LoRA rows take where
 *     the fused LoRA variants do not run (devices with fewer than 10 storage buffers per stage).
 * Every measured request is preceded by a warm-up of the same shape (pipeline compilation is paid
 * once per shape, seconds each on SwiftShader), and prompts use fresh cache salts so the prefix
 * cache never helps.
 *
 * Environment-agnostic: run.ts calls it in Node (Dawn), browser-entry.ts in a Chromium page.
 * Not here: the models (bench-models.ts), printing and recording (report.ts).
 */
import type { GemmTileName } from '../../src/engine/gpu/context';
import type { DecodeGraphChoice } from '../../src/engine/generate/decode-graph';
import type { GpuContext } from '../../src/engine/gpu/device';
import { Engine } from '../../src/engine/generate/engine';
import type { GenerationHandle, GenerationRequest, LoraAdapter } from '../../src/engine/generate/types';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { loraModulesOf } from '../../src/engine/model/lora/peft-modules';
import { randomLoraTensors } from '../../src/engine/reference/lora';
import { benchModel, type BenchModel } from './bench-models';
import { kernelShares, type KernelShare } from './profile';

export interface GenerationBenchOptions {
  models: string[];
  /** Prompt length of the prefill measurement (default 512; quick 128). */
  promptTokens?: number;
  /** Decode steps per measurement (default 32; quick 6). */
  decodeSteps?: number;
  batches?: number[];
  /** Keep only the first N layers of the random shapes (default all; quick on software adapters: 4). */
  layers?: number;
  quick?: boolean;
  /** Where the bundled model is served from (a browser page's origin); omitted in Node. */
  baseUrl?: string;
  /** Also time each kernel of batch-1 decode steps (profile.ts; needs timestamp-query). */
  profile?: boolean;
  /**
   * Largest batch decoded with the fused MLP (EngineOptions.fusedMaxBatch, default 4): above it Llama-like
   * models take the unfused GEMV pair and Gemma folds the MLP partials once per layer. Set to measure
   * both at one batch.
   */
  fusedMaxBatch?: number;
  /** Which graph decodes (EngineOptions.decodeGraph, default 'auto'): 'fused' measures Gemma's fused path. */
  decodeGraph?: DecodeGraphChoice;
  /** GEMV loads in flight per invocation (EngineOptions.gemvLoads; default 4 on GPUs): 1 measures the old kernels. */
  gemvLoads?: number;
  /** DecodeMlp's slice width (EngineOptions.mlpSlice, default 128): smaller slices, more workgroups at batch 1. */
  mlpSlice?: number;
  /** The prefill GEMM's tile (EngineOptions.gemmTile). */
  gemmTile?: GemmTileName;
  /** Also decode each batch with every request under a random LoRA adapter of this rank on every projection. */
  loraRank?: number;
}

export interface DecodeFigures {
  batch: number;
  tokensPerSecond: number;
  /** Mean wall time of a decode step, ms. */
  stepMs: number;
  /** Graph of the step: decode-fused (4 dispatches per layer) or decode-unfused (5). */
  graph: string;
  dispatchesPerLayer: number;
  dispatchesPerStep: number;
  submissionsPerStep: number;
  readbackBytesPerSequence: number;
  /** Batch-1 only, on a GPU of known bandwidth: weights bytes / bandwidth over the measured step time. */
  bandwidthRatio: number | null;
}

/** Decode of a batch whose every request carries the same LoRA adapter. */
export interface LoraDecodeFigures {
  batch: number;
  rank: number;
  modules: string[];
  tokensPerSecond: number;
  stepMs: number;
  /** Graph of the step: decode-fused-lora (the fused kernels' LoRA variants) or decode-lora (the general graph). */
  graph: string;
  dispatchesPerLayer: number;
  dispatchesPerStep: number;
  /** The general LoRA graph's dispatches per layer at this batch (what the fused graph saves). */
  generalDispatchesPerLayer: number;
}

export interface GenerationBenchResult {
  model: string;
  layers: number;
  totalLayers: number;
  parameters: number;
  device: string;
  promptTokens: number;
  ttftMs: number;
  prefillTokensPerSecond: number;
  decode: DecodeFigures[];
  /** With `loraRank`: decode with every request under one adapter, per batch. */
  loraDecode?: LoraDecodeFigures[];
  gpuBytes: { weights: number; kvCache: number; activations: number; total: number };
  /** Weight bytes a decode step reads per token (every matrix once, in its stored format). */
  weightBytesPerToken: number;
  maxModelLen: number;
  /** Where a batch-1 decode step's GPU time goes (with `profile`, on an adapter with timestamp-query). */
  decodeProfile?: KernelShare[];
  /** The same with every row under the `loraRank` adapter (with `profile` and `loraRank`). */
  loraDecodeProfile?: KernelShare[];
}

/** Memory bandwidth of GPUs the bench may meet, bytes/s (vendor spec sheets). */
const BANDWIDTH: Array<[RegExp, number]> = [
  [/h100/i, 3.35e12],
  [/h200/i, 4.8e12],
  [/a100/i, 2.0e12],
  [/4090/, 1.01e12],
  [/apple m2|m2 /i, 100e9],
];

function adapterName(gpu: GpuContext): string {
  const a = gpu.description.adapter;
  return [a.vendor, a.architecture, a.device, a.description].filter((x) => x).join(' / ') || 'unknown adapter';
}

function bandwidthOf(gpu: GpuContext): number | null {
  const name = adapterName(gpu);
  return BANDWIDTH.find(([re]) => re.test(name))?.[1] ?? null;
}

let salt = 0;

function benchRequest(model: string, prompt: number[], maxTokens: number, adapter: LoraAdapter | null = null): GenerationRequest {
  return {
    model,
    adapter,
    promptTokenIds: prompt,
    n: 1,
    sampling: [{ temperature: 0, ignoreEos: true }],
    maxTokens,
    promptLogprobs: null,
    badWords: [],
    cacheSalt: `bench-${++salt}`,
  };
}

/** Token event times of a handle, ms since `t0`. */
async function tokenTimes(handle: GenerationHandle): Promise<number[]> {
  const times: number[] = [];
  for await (const ev of handle) if (ev.type === 'tokens') times.push(performance.now());
  return times;
}

function prompt(n: number, V: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => 1 + ((i * 7919 + seed * 104729) % (V - 1)));
}

/** A LoRA adapter of this rank on every projection of the model, random weights (alpha = 2r, as is common). */
function benchAdapter(cfg: ModelConfig, rank: number): LoraAdapter {
  const modules = loraModulesOf(cfg);
  return {
    key: `bench-lora-r${rank}`,
    config: { rank, alpha: 2 * rank, targetModules: [...modules], useRslora: false },
    load: async () => randomLoraTensors(cfg, rank, modules, 17, 'f32'),
  };
}

/**
 * B requests decoding together (steady state: from the moment every request has its first token to
 * the last token), after a warm-up of the same shape that compiles this batch size's graph.
 */
async function timeDecode(
  engine: Engine,
  name: string,
  V: number,
  B: number,
  steps: number,
  adapter: LoraAdapter | null,
): Promise<{ tokensPerSecond: number; stepMs: number; submissionsPerStep: number }> {
  const model = engine.models[0];
  const profiler = engine.kernelContext.profiler;
  const run = (seed: number, n: number) =>
    Promise.all(Array.from({ length: B }, (_, i) => tokenTimes(engine.generate(benchRequest(name, prompt(16, V, seed + i), n, adapter)))));
  await run(100 * B, 3);
  const stepsBefore = model.scheduler.stats.steps;
  const subsBefore = profiler.submissions;
  const times = await run(1000 * B, steps + 1);
  const allSteps = model.scheduler.stats.steps - stepsBefore;
  const submissions = profiler.submissions - subsBefore;
  const from = Math.max(...times.map((t) => t[0]));
  const to = Math.max(...times.map((t) => t[t.length - 1]));
  const tokens = times.reduce((s, t) => s + t.filter((x) => x > from).length, 0);
  return {
    tokensPerSecond: tokens / ((to - from) / 1000),
    stepMs: (to - from) / Math.max(1, Math.round(tokens / B)),
    // Over the run's steps of either kind (the B prompts' prefill, then the decode steps).
    submissionsPerStep: submissions / allSteps,
  };
}

export async function runGenerationBench(
  gpu: GpuContext,
  options: GenerationBenchOptions,
  log: (line: string) => void = () => {},
): Promise<GenerationBenchResult[]> {
  const quick = options.quick ?? gpu.description.adapter.isSoftware;
  const results: GenerationBenchResult[] = [];
  for (const name of options.models) {
    const bm = await benchModel(name, {
      baseUrl: options.baseUrl,
      layers: options.layers ?? (quick && name !== 'tiny-chat' ? 4 : undefined),
    });
    results.push(await measureGeneration(gpu, bm, options, log));
  }
  return results;
}

/**
 * Kernel shares of batch-1 decode steps (under `adapter` when given: the LoRA decode graph): timing
 * starts once the request's prefill gave its first token.
 */
async function profileDecode(
  engine: Engine,
  name: string,
  V: number,
  steps: number,
  log: (line: string) => void,
  adapter: LoraAdapter | null = null,
): Promise<KernelShare[] | undefined> {
  const profiler = engine.kernelContext.profiler;
  let started = false;
  for await (const ev of engine.generate(benchRequest(name, prompt(16, V, 7), steps + 1, adapter))) {
    if (ev.type === 'tokens' && !started) started = profiler.startKernelTiming();
  }
  if (!started) {
    log('  profile: the adapter has no timestamp-query; no kernel times');
    return undefined;
  }
  const timings = await profiler.stopKernelTiming();
  // Each decode step records one `<graph>.rest` pass (its sampler) after its kernels.
  const measured = timings.filter((t) => t.label.endsWith('.rest')).length;
  log(`  profile: ${timings.length} kernels timed over ${measured} decode steps`);
  return kernelShares(timings, measured);
}

/** The generation figures of one model (loaded here, destroyed after). */
export async function measureGeneration(
  gpu: GpuContext,
  bm: BenchModel,
  options: Omit<GenerationBenchOptions, 'models'>,
  log: (line: string) => void = () => {},
): Promise<GenerationBenchResult> {
  const quick = options.quick ?? gpu.description.adapter.isSoftware;
  const P = options.promptTokens ?? (quick ? 128 : 512);
  const steps = options.decodeSteps ?? (quick ? 6 : 32);
  const batches = options.batches ?? [1, 8];
  const device = adapterName(gpu);
  const name = bm.name;
  const cfg = bm.files.config;
  log(`generation bench: ${name} (${cfg.numLayers} layers, ${(bm.parameters / 1e6).toFixed(1)}M parameters) on ${device}`);
  const engine = new Engine(gpu, {
    source: () => Promise.reject(new Error('the bench loads its models itself')),
    maxSeqs: Math.max(...batches, 8),
    prefillChunk: Math.max(P, 64),
    maxModelLen: P + steps + 64,
    fusedMaxBatch: options.fusedMaxBatch,
    decodeGraph: options.decodeGraph,
    gemvLoads: options.gemvLoads,
    mlpSlice: options.mlpSlice,
    gemmTile: options.gemmTile,
    kvCacheBytes: Math.max(8 << 20, 2 * cfg.numLayers * cfg.numKvHeads * cfg.headDim * 4 * (P + steps + 80) * Math.max(...batches, 1)),
  });
  const t0 = performance.now();
  await engine.loadFiles(name, bm.files);
  log(`  loaded in ${(performance.now() - t0).toFixed(0)} ms`);
  const model = engine.models[0];
  const ctx = engine.kernelContext;
  const V = cfg.vocabSize;
  try {
    // Prefill: warm-up, then the measured request (first token = the prefill's sample).
    await tokenTimes(engine.generate(benchRequest(name, prompt(P, V, 1), 1)));
    const start = performance.now();
    const [first] = await tokenTimes(engine.generate(benchRequest(name, prompt(P, V, 2), 1)));
    const ttftMs = first - start;
    log(`  prefill ${P} tokens: ${ttftMs.toFixed(0)} ms to the first token`);
    const decode: DecodeFigures[] = [];
    for (const B of batches) {
      const { tokensPerSecond, stepMs, submissionsPerStep } = await timeDecode(engine, name, V, B, steps, null);
      const graph = model.runner.describeDecode(B, 16 + steps);
      const last = model.runner.lastStep!;
      const bandwidth = bandwidthOf(gpu);
      decode.push({
        batch: B,
        tokensPerSecond,
        stepMs,
        graph: last.graph,
        dispatchesPerLayer: graph.dispatchesPerLayer,
        dispatchesPerStep: last.dispatches,
        submissionsPerStep,
        readbackBytesPerSequence: last.readbackBytes / last.rows,
        bandwidthRatio: B === 1 && bandwidth ? bm.weightBytes / bandwidth / (stepMs / 1000) : null,
      });
      log(
        `  decode batch ${B}: ${tokensPerSecond.toFixed(1)} tokens/s (${stepMs.toFixed(1)} ms per step, ${last.graph}, ${graph.dispatchesPerLayer} dispatches per layer)`,
      );
    }
    // Before the adapter pool exists: the figures of the engine serving the base model alone.
    const gpuBytes = { weights: model.weights.gpuBytes, kvCache: model.kv.bytes, activations: model.runner.bytes, total: model.gpuBytes };
    const loraDecode = options.loraRank ? await measureLoraDecode(engine, bm, batches, options.loraRank, steps, log) : undefined;
    const decodeProfile = options.profile ? await profileDecode(engine, name, V, steps, log) : undefined;
    const loraDecodeProfile =
      options.profile && options.loraRank
        ? await profileDecode(engine, name, V, steps, log, benchAdapter(cfg, options.loraRank))
        : undefined;
    return {
      decodeProfile,
      loraDecodeProfile,
      model: name,
      layers: cfg.numLayers,
      totalLayers: bm.totalLayers,
      parameters: bm.parameters,
      device,
      promptTokens: P,
      ttftMs,
      prefillTokensPerSecond: P / (ttftMs / 1000),
      decode,
      loraDecode,
      gpuBytes,
      weightBytesPerToken: bm.weightBytes,
      maxModelLen: model.served.maxModelLen,
    };
  } finally {
    await ctx.device.queue.onSubmittedWorkDone();
    model.destroy();
  }
}

/** Decode at each batch with every request under one random adapter of `rank` (benchAdapter). */
async function measureLoraDecode(
  engine: Engine,
  bm: BenchModel,
  batches: number[],
  rank: number,
  steps: number,
  log: (line: string) => void,
): Promise<LoraDecodeFigures[]> {
  const adapter = benchAdapter(bm.files.config, rank);
  const runner = engine.models[0].runner;
  const out: LoraDecodeFigures[] = [];
  for (const B of batches) {
    const { tokensPerSecond, stepMs } = await timeDecode(engine, bm.name, bm.files.config.vocabSize, B, steps, adapter);
    const last = runner.lastStep!;
    const graph = runner.describeDecode(B, 16 + steps, true);
    const general = runner.describeGeneralDecode(B, 16 + steps, true);
    out.push({
      batch: B,
      rank,
      modules: adapter.config.targetModules,
      tokensPerSecond,
      stepMs,
      graph: last.graph,
      dispatchesPerLayer: graph.dispatchesPerLayer,
      dispatchesPerStep: last.dispatches,
      generalDispatchesPerLayer: general.dispatchesPerLayer,
    });
    log(
      `  decode batch ${B}, LoRA rank ${rank}: ${tokensPerSecond.toFixed(1)} tokens/s (${stepMs.toFixed(1)} ms per step, ${last.graph}, ${graph.dispatchesPerLayer} dispatches per layer; the general LoRA graph ${general.dispatchesPerLayer})`,
    );
  }
  return out;
}
