/**
 * The training section of `npm run bench`: one LoRA optimizer step (rank 16 on q, k, v, o, gate,
 * up, down; SFT loss; AdamW) on random bf16 models with the exact shapes of SmolLM2-135M and
 * Qwen2.5-0.5B (or, as `<shape>@q8_0` / `@q4_k`, QLoRA over those shapes' matrices in GGML blocks,
 * the quantized section's step: quantized.ts), reporting training tokens/s, the GPU memory the step allocates (base weights,
 * LoRA state, activations: WebGPU has no memory query, so this is the sum of the buffers'
 * sizes), the model FLOPs per token and, where the device's f32 peak is known, the fraction of it
 * the step reaches.
 *
 * Environment-agnostic (no Node imports): run.ts calls `runTrainingBench` in Node over Dawn, and
 * the Chromium mode can call it in a page with navigator.gpu. SwiftShader is ~100x slower than a
 * GPU: on a software adapter the defaults shrink to a quick run (fewer layers and tokens, stated
 * in the results), so the section finishes in minutes there.
 *
 * Not here: the shapes and their random weights (bench-models.ts), generation figures, the
 * trainer (src/engine/train).
 */
import { createKernelContext, type GemmTileName } from '../../src/engine/gpu/context';
import type { GpuContext } from '../../src/engine/gpu/device';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import type { TrainingSequence } from '../../src/engine/train/types';
import { BENCH_SHAPES, randomBf16Tensors } from './bench-models';
import { kernelShares, type KernelShare } from './profile';
import { parseBenchModel, randomFormatTensors } from './quantized';

/** The training section's default models (the peers section adds llama-3.2-1b: peers.ts). */
export const TRAIN_BENCH_MODELS = ['smollm2-135m', 'qwen2.5-0.5b', 'gemma-3-270m', 'gemma-3-1b'];

/** FP32 peak of GPUs the bench may meet (docs/reference/wgsl-engine.md §7.2; vendor spec sheets). */
const F32_PEAK: Array<[RegExp, number, string]> = [
  [/h100/i, 66.9e12, 'H100 SXM'],
  [/h200/i, 66.9e12, 'H200'],
  [/4090/, 82.6e12, 'RTX 4090'],
  [/apple m2|m2 /i, 3.6e12, 'Apple M2'],
];

export interface TrainBenchOptions {
  models: string[];
  /** Tokens per step: one sequence of this length (default 2048; quick: 32). */
  tokens?: number;
  /** Keep only the first N layers (quick runs on software adapters: 1); default all. */
  layers?: number;
  /** Timed steps after one warm-up step (default 3; quick: 1). */
  steps?: number;
  rank?: number;
  mode?: 'auto' | 'save' | 'recompute';
  /** Force the quick defaults (default: on software adapters). */
  quick?: boolean;
  /** Also time each kernel of one more step (profile.ts; needs timestamp-query). */
  profile?: boolean;
  /** The GEMM tile (KernelContext.gemmTile; default 'small', 64 x 64). */
  gemmTile?: GemmTileName;
}

/** `--gemm-tile 64 | 128` as a KernelContext.gemmTile. */
export function gemmTileArg(v: string | boolean | undefined): GemmTileName | undefined {
  if (v === undefined) return undefined;
  if (v === '64' || v === '128') return v === '128' ? 'large' : 'small';
  throw new Error(`bench: --gemm-tile takes 64 or 128, not ${v}`);
}

export interface TrainBenchResult {
  model: string;
  layers: number;
  /** Layers of the real model (the quick mode keeps fewer). */
  modelLayers: number;
  tokens: number;
  rank: number;
  mode: string;
  /** Median wall time of a step, ms. */
  stepMs: number;
  tokensPerSecond: number;
  /** Base weights + LoRA state + activations, bytes. */
  gpuBytes: number;
  weightBytes: number;
  activationBytes: number;
  flopsPerToken: number;
  /** Achieved FLOP/s over the device's f32 peak, or null when the peak is unknown. */
  peakRatio: number | null;
  device: string;
  /** Where a step's GPU time goes (with `profile`, on an adapter with timestamp-query). */
  stepProfile?: KernelShare[];
}

/**
 * Model FLOPs of one trained token: every frozen matmul twice forward-equivalent (forward and dX;
 * no dW), again in the forward when layers are recomputed; causal attention (forward 4 HS per
 * query-key pair, backward 10: S recomputed, dV, dP, dQ, dK; T/2 pairs per query on average); the
 * LoRA terms (~8 r (in + out) per module: shrink, expand, g B, dX, dA, dB); the head (logits and dX).
 */
export function trainingFlopsPerToken(cfg: ModelConfig, T: number, rank: number, recompute: boolean): number {
  const C = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  const layerParams = C * (q + 2 * kv) + q * C + 3 * C * F;
  const loraPerLayer = 8 * rank * (C + q + 2 * (C + kv) + q + C + 2 * (C + F) + F + C);
  const attention = 7 * cfg.headDim * cfg.numHeads * T;
  const layers = cfg.numLayers * ((recompute ? 6 : 4) * layerParams + attention + loraPerLayer);
  return layers + 4 * cfg.vocabSize * C;
}

function devicePeak(gpu: GpuContext): { peak: number | null; name: string } {
  const a = gpu.description.adapter;
  const text = `${a.vendor} ${a.architecture} ${a.device} ${a.description}`;
  for (const [re, peak, name] of F32_PEAK) if (re.test(text)) return { peak, name };
  return { peak: null, name: a.description || a.architecture || a.vendor || 'unknown adapter' };
}

export async function runTrainingBench(
  gpu: GpuContext,
  options: TrainBenchOptions,
  log: (line: string) => void = () => {},
): Promise<TrainBenchResult[]> {
  const quick = options.quick ?? gpu.description.adapter.isSoftware;
  const tokens = options.tokens ?? (quick ? 32 : 2048);
  const steps = options.steps ?? (quick ? 1 : 3);
  const rank = options.rank ?? 16;
  const ctx = createKernelContext(gpu, { gemmTile: options.gemmTile });
  const { peak, name: device } = devicePeak(gpu);
  const results: TrainBenchResult[] = [];
  for (const model of options.models) {
    const { shape: shapeName, format } = parseBenchModel(model);
    const shape = BENCH_SHAPES[shapeName];
    if (!shape)
      throw new Error(`train bench: unknown model ${model} (${TRAIN_BENCH_MODELS.join(', ')}, each also as <name>@q8_0 or @q4_k)`);
    const full = parseModelConfig(shape);
    const layers = Math.min(full.numLayers, options.layers ?? (quick ? 1 : full.numLayers));
    const cfg: ModelConfig = { ...full, numLayers: layers, layerTypes: full.layerTypes.slice(0, layers) };
    log(`train bench: ${model} (${layers} of ${full.numLayers} layers), ${tokens} tokens per step, LoRA rank ${rank}, on ${device}`);
    const tensors = format === 'bf16' ? randomBf16Tensors(cfg, 7) : randomFormatTensors(cfg, format, 7);
    const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: Math.max(tokens, 16) });
    const engine = new GpuTrainingEngine({
      kernelContext: ctx,
      weights: async () => weights,
      microBatchTokens: tokens,
      activationMode: options.mode ?? 'auto',
      log,
    });
    const lora = {
      rank,
      alpha: 2 * rank,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      useRslora: false,
    };
    const session = engine.sessionFor(weights, {
      lora,
      initialAdapter: null,
      optimizerState: null,
      optimizer: { beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
      seed: 1,
    });
    try {
      const seq: TrainingSequence = {
        tokens: Uint32Array.from({ length: tokens }, (_, i) => (i * 7919 + 13) % cfg.vocabSize),
        trainable: Uint8Array.from({ length: tokens }, (_, i) => (i > 0 ? 1 : 0)),
      };
      const times: number[] = [];
      for (let i = 0; i <= steps; i++) {
        const t0 = performance.now();
        await session.step([seq], { kind: 'sft' }, 1e-4);
        const ms = performance.now() - t0;
        log(`  step ${i}${i === 0 ? ' (warm-up: pipeline compilation)' : ''}: ${ms.toFixed(0)} ms`);
        if (i > 0) times.push(ms);
      }
      let stepProfile: KernelShare[] | undefined;
      if (options.profile && ctx.profiler.startKernelTiming()) {
        await session.step([seq], { kind: 'sft' }, 1e-4);
        stepProfile = kernelShares(await ctx.profiler.stopKernelTiming(), 1);
        log(`  profile: ${stepProfile.reduce((n, k) => n + k.perStep, 0)} kernels timed in one step`);
      }
      times.sort((a, b) => a - b);
      const stepMs = times[Math.floor(times.length / 2)];
      const tokensPerSecond = tokens / (stepMs / 1000);
      const plan = session.activationPlan;
      const flopsPerToken = trainingFlopsPerToken(cfg, tokens, rank, plan.mode === 'recompute');
      results.push({
        model,
        layers,
        modelLayers: full.numLayers,
        tokens,
        rank,
        mode: plan.mode,
        stepMs,
        tokensPerSecond,
        gpuBytes: weights.gpuBytes + session.gpuBytes,
        weightBytes: weights.gpuBytes,
        activationBytes: plan.totalBytes,
        flopsPerToken,
        peakRatio: peak ? (tokensPerSecond * flopsPerToken) / peak : null,
        device,
        stepProfile,
      });
    } finally {
      session.dispose();
      // Let the session release its buffers (after its queue) before the weights go.
      await ctx.device.queue.onSubmittedWorkDone();
      weights.destroy();
    }
  }
  return results;
}

/** The results as a markdown table. */
export function trainingTable(results: TrainBenchResult[]): string {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  const rows = results.map(
    (r) =>
      `| ${r.model} (${r.layers === r.modelLayers ? `${r.layers} layers` : `${r.layers} of ${r.modelLayers} layers`}) | ${r.tokens} | ${r.rank} | ${r.mode} | ${r.stepMs.toFixed(0)} | ${r.tokensPerSecond.toFixed(1)} | ${mib(r.gpuBytes)} (weights ${mib(r.weightBytes)}, activations ${mib(r.activationBytes)}) | ${(r.flopsPerToken / 1e9).toFixed(2)} | ${r.peakRatio === null ? `n/a (${r.device})` : `${(100 * r.peakRatio).toFixed(1)} % of ${r.device}`} |`,
  );
  return [
    '| model | tokens / step | rank | activations | step ms | train tokens/s | GPU memory | GFLOP / token | of f32 peak |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Command-line flags of this section: --train-models a,b --train-tokens N --train-layers N --train-steps N --train-mode m --quick. */
export function trainOptionsFromArgs(args: Record<string, string | boolean | undefined>): TrainBenchOptions {
  const num = (k: string) => (typeof args[k] === 'string' ? Number(args[k]) : undefined);
  return {
    models: typeof args['train-models'] === 'string' ? args['train-models'].split(',') : TRAIN_BENCH_MODELS,
    tokens: num('train-tokens'),
    layers: num('train-layers'),
    steps: num('train-steps'),
    rank: num('train-rank'),
    mode: args['train-mode'] as TrainBenchOptions['mode'],
    quick: args.quick === true ? true : args.full === true ? false : undefined,
    profile: args.profile === true,
    gemmTile: gemmTileArg(args['gemm-tile']),
  };
}
