/**
 * The training contract between the service (the job runner's Trainer: tokenising trajectories
 * and SFT data, advantages, batching, events, checkpoints) and the engine (LoRA forward and
 * backward on the GPU, losses, AdamW).
 *
 * The service decides *what* each optimizer step trains on and with which per-token numbers
 * (trainable mask, sampler logprobs, advantages, weights, normalised over the whole job as ART
 * does: docs/reference/art-compat.md §3.3); the engine computes the step's loss exactly as
 * docs/reference/art-compat.md §3.4 (RL) or §4 (SFT) says, its gradient, clips and applies it.
 *
 * Not here: the implementation (session.ts and the graph under engine/train), the job state
 * machine and events (src/service/training).
 */
import type { LoraConfig } from '../model/lora/lora-config';
import type { TensorData } from '../tensor/tensor-data';

/**
 * The longest sequence a training session takes by default (GpuTrainingEngine's micro-batch
 * tokens, further capped by the model's context and RoPE table): the trainer cuts or drops longer
 * sequences before they reach the engine.
 */
export const MAX_TRAINING_SEQUENCE_TOKENS = 2048;

/** One token sequence of a step: an SFT conversation, or one history of an RL trajectory. */
export interface TrainingSequence {
  /** Token ids of the whole sequence (prompt and completions). */
  tokens: Uint32Array;
  /**
   * Per token i: 1 if token i is a training target (predicted from tokens < i), else 0.
   * trainable[0] is always 0. SFT: the assistant tokens; RL: the sampled tokens of trainable Choices.
   */
  trainable: Uint8Array;
  /** RL: per token i, the logprob the sampler gave token i (NaN where unknown: the ratio is then 1). */
  oldLogprobs?: Float32Array;
  /** RL: per token i, the advantage A_i (already scaled, balanced and normalised over the job). */
  advantages?: Float32Array;
  /** Per token i, the loss weight w_i (RL: the trajectory weight normalised over the job; SFT: 1). */
  weights?: Float32Array;
  /**
   * Sequences sharing a group id are one sequence for sequence-level importance sampling (the
   * histories of one trajectory). Defaults to the sequence's own index.
   */
  importanceGroup?: number;
}

export type ImportanceSamplingLevel = 'token' | 'sequence' | 'average' | 'geometric_average';

export type LossSpec =
  /** Token-mean cross-entropy over the step's trainable tokens (docs/reference/art-compat.md §4). */
  | { kind: 'sft' }
  /** ART's RL policy loss (docs/reference/art-compat.md §3.4); every field already resolved from null to its default. */
  | {
      kind: 'rl';
      /** PPO clipping; false is CISPO. */
      ppo: boolean;
      epsilon: number;
      epsilonHigh: number;
      importanceSamplingLevel: ImportanceSamplingLevel;
      /** rho <- rho if 1 - eps < rho < 1 + eps_high, else 0. */
      maskProbRatio: boolean;
      /** kimi_k2_tau: A_t <- A_t - tau * sg(new_t - old_t); null when unset. */
      kimiK2Tau: number | null;
      /** rho <- min(rho, M) on every token (as ART's code does); null when unset. */
      maxNegativeAdvantageImportanceSamplingWeight: number | null;
    };

export interface OptimizerConfig {
  /** AdamW (decoupled weight decay), bias correction with a 1-based step. */
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Global L2 norm of the LoRA gradients is clipped to this; 0 disables clipping. */
  maxGradNorm: number;
}

export interface StepMetrics {
  /** The optimised objective of the step (SFT: mean CE; RL: policy loss). */
  loss: number;
  /** RL only. */
  policyLoss?: number;
  /** RL only: max |rho - 1| over the trained tokens with a sampler logprob (loss.ts). */
  maxRatioDeviation?: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Mean entropy of the model's distribution over the trainable tokens, when computed. */
  entropy?: number;
  learningRate: number;
  numTrainableTokens: number;
  numTokens: number;
  tokensPerSecond: number;
}

/** Optimizer moments and step count: what a resumed job needs besides the adapter. */
export interface OptimizerState {
  step: number;
  /** Same names as the adapter tensors with `.exp_avg` / `.exp_avg_sq` appended, f32. */
  tensors: TensorData[];
}

export interface TrainingSession {
  readonly lora: LoraConfig;
  /** Trainable parameters (LoRA A and B of every targeted module). */
  readonly parameterCount: number;
  /**
   * One optimizer step over these sequences: forward, loss, backward (micro-batched as memory
   * requires, gradients accumulated in a fixed order), clip, AdamW. Resolves after the step's GPU
   * work has finished.
   */
  step(sequences: TrainingSequence[], loss: LossSpec, learningRate: number, signal?: AbortSignal): Promise<StepMetrics>;
  /** Current policy logprob of every token (NaN at position 0), for precalculate_logprobs. */
  logprobs(sequences: TrainingSequence[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** The current adapter in PEFT layout (lora_A [r, in], lora_B [out, r], f32, PEFT key names). */
  exportAdapter(): Promise<TensorData[]>;
  exportOptimizerState(): Promise<OptimizerState>;
  dispose(): void;
}

export interface StartSessionOptions {
  /** Base model id as the InferenceEngine knows it. */
  baseModel: string;
  lora: LoraConfig;
  /** Start from this adapter (PEFT names); null: PEFT's default init (A kaiming-uniform, B zero). */
  initialAdapter: TensorData[] | null;
  /** Resume the optimizer; null starts fresh moments. */
  optimizerState: OptimizerState | null;
  optimizer: OptimizerConfig;
  /** Seeds the LoRA initialisation, so a run can be reproduced. */
  seed: number;
}

export interface TrainingEngine {
  startSession(options: StartSessionOptions): Promise<TrainingSession>;
}
