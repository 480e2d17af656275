/**
 * GpuTrainingEngine: the TrainingEngine of types.ts. It trains LoRA adapters on the base model's
 * resident weights (the inference engine's WeightSet, on the same device: no second copy of the
 * model), one session per job. A session plans its memory once (memory-plan.ts, logged), uploads
 * the initial adapter (PEFT's default init from the seed, or the given PEFT tensors) and the
 * optimizer state, and runs steps (session.ts).
 *
 * Where the weights come from is the caller's: `weights(baseModel)` resolves a model id to its
 * WeightSet (the generation engine's residency; a test's own upload).
 * Not here: jobs, data, checkpoints (src/service/training).
 */
import type { KernelContext } from '../gpu/context';
import { attentionShapeOf } from '../model/weights/kernel-args';
import type { WeightSet } from '../model/weights/weight-set';
import { LoraGrad } from '../kernels/lora-grad';
import { TrainingBuffers } from './activations';
import { loraBackwardProblems } from './graph-backward';
import { createTrainKernels, type TrainKernels } from '../kernels/registry';
import { initLoraParameters, loraFromTensors, planLora, type LoraGroupName, type LoraPlan } from './lora-plan';
import { LoraState } from './lora-state';
import { describePlan, planActivations, type ActivationMode, type ActivationPlan } from './memory-plan';
import { GpuTrainingSession } from './session';
import { MAX_TRAINING_SEQUENCE_TOKENS, type StartSessionOptions, type TrainingEngine, type TrainingSession } from './types';

export interface GpuTrainingEngineOptions {
  kernelContext: KernelContext;
  /** The resident weights of a base model (loaded by the inference engine). */
  weights(baseModel: string): Promise<WeightSet>;
  /** Tokens per micro-batch, the longest sequence a session trains on (default min(MAX_TRAINING_SEQUENCE_TOKENS, the model's context); at most the weights' RoPE positions). */
  microBatchTokens?: number;
  /** Sequences per micro-batch (default 64). */
  microBatchSequences?: number;
  /** Bytes the saved activations may take before the plan switches to recomputation (default 2.5 GiB). */
  activationBudgetBytes?: number;
  /** Force a mode (tests, benchmarks); default 'auto'. */
  activationMode?: ActivationMode | 'auto';
  /** Receives the memory plan of each session (default console.info). */
  log?: (line: string) => void;
}

const DEFAULT_SEQUENCES = 64;
const DEFAULT_BUDGET = 2.5 * 2 ** 30;

/** The largest LoRA split-K scratch of any group at T tokens. */
function loraPartFloats(lora: LoraPlan) {
  return (group: LoraGroupName, T: number) => {
    let most = 0;
    for (const layer of lora.layers) {
      const g = layer[group];
      if (!g) continue;
      for (const problems of loraBackwardProblems(g, lora.rank, T)) most = Math.max(most, LoraGrad.partFloats(problems));
    }
    return most;
  };
}

export class GpuTrainingEngine implements TrainingEngine {
  private readonly kernels = new WeakMap<WeightSet, TrainKernels>();

  constructor(private readonly opts: GpuTrainingEngineOptions) {}

  /** The activation plan a session of this model and adapter would get. */
  planFor(weights: WeightSet, lora: LoraPlan): ActivationPlan {
    const cfg = weights.config;
    const ctx = this.opts.kernelContext;
    return planActivations(
      cfg,
      lora,
      {
        // Positions beyond the RoPE table the weights carry cannot be trained.
        tokens: Math.min(
          this.opts.microBatchTokens ?? Math.min(MAX_TRAINING_SEQUENCE_TOKENS, cfg.maxPositionEmbeddings),
          weights.ropePositions,
        ),
        sequences: this.opts.microBatchSequences ?? DEFAULT_SEQUENCES,
        mode: this.opts.activationMode ?? 'auto',
        budgetBytes: this.opts.activationBudgetBytes ?? DEFAULT_BUDGET,
        maxBindingBytes: ctx.maxStorageBindingSize,
      },
      loraPartFloats(lora),
    );
  }

  async startSession(options: StartSessionOptions): Promise<TrainingSession> {
    const weights = await this.opts.weights(options.baseModel);
    return this.sessionFor(weights, options);
  }

  /** A session on given weights (what startSession does once the model id is resolved). */
  sessionFor(weights: WeightSet, options: Omit<StartSessionOptions, 'baseModel'>): GpuTrainingSession {
    const ctx = this.opts.kernelContext;
    const cfg = weights.config;
    const lora = planLora(cfg, options.lora);
    const initial = options.initialAdapter ? loraFromTensors(lora, cfg, options.initialAdapter) : initLoraParameters(lora, options.seed);
    const plan = this.planFor(weights, lora);
    let k = this.kernels.get(weights);
    if (!k) {
      k = createTrainKernels(ctx, attentionShapeOf(cfg));
      this.kernels.set(weights, k);
    }
    const state = new LoraState(ctx.device, lora);
    let buf: TrainingBuffers;
    try {
      state.setParameters(initial);
      state.setOptimizerState(options.optimizerState);
      buf = new TrainingBuffers(ctx.device, plan, cfg.numLayers);
    } catch (e) {
      state.destroy();
      throw e;
    }
    (this.opts.log ?? console.info)(
      `${describePlan(plan, cfg.numLayers)}\n  LoRA: ${lora.elements} parameters (rank ${lora.rank}, ${lora.config.targetModules.join(', ')}), ${(state.bytes / 2 ** 20).toFixed(1)} MiB with gradients and AdamW moments`,
    );
    return new GpuTrainingSession(ctx, { k, weights, lora, state, buf }, options.optimizer, () => {
      buf.destroy();
      state.destroy();
    });
  }
}

/** What the training engine needs of the generation engine (engine/generate/engine.ts `Engine` has it). */
export interface ResidentWeightsProvider {
  readonly kernelContext: KernelContext;
  residentWeights(id: string): Promise<WeightSet>;
}

/**
 * The training engine over a generation engine: its device context and its resident base weights,
 * so one copy of the model serves chat and training. What the engine worker's `training` option
 * builds (host/engine-endpoint.ts, and scripts/demo/node-hearth.ts in Node).
 */
export function trainingEngineOver(
  inference: ResidentWeightsProvider,
  opts: Omit<GpuTrainingEngineOptions, 'kernelContext' | 'weights'> = {},
): GpuTrainingEngine {
  return new GpuTrainingEngine({ ...opts, kernelContext: inference.kernelContext, weights: (id) => inference.residentWeights(id) });
}
