// Shared set-up of the trainer's GPU tests: a random test model on the GPU and its reference, a
// training engine over it, seeded training sequences, and the reference's loss and LoRA gradients
// of a whole step (reference/model-train.ts per sequence, summed) laid out like the trainer's flat
// gradient buffer.
import type { KernelContext } from '../../src/engine/gpu/context';
import type { Architecture } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { crossEntropyForward } from '../../src/engine/reference/cross-entropy';
import { randomLoraTensors, referenceLora } from '../../src/engine/reference/lora';
import { type LoraModule } from '../../src/engine/model/lora/peft-modules';
import { lossAndGradients } from '../../src/engine/reference/model-train';
import type { ReferenceModel } from '../../src/engine/reference/model';
import { Rng } from '../../src/engine/tensor/random';
import { GpuTrainingEngine, type GpuTrainingEngineOptions } from '../../src/engine/train/engine';
import type { LoraPlan } from '../../src/engine/train/lora-plan';
import { stepLoss } from '../../src/engine/train/loss';
import type { GpuTrainingSession } from '../../src/engine/train/session';
import type { LossSpec, OptimizerConfig, TrainingSequence } from '../../src/engine/train/types';
import type { LoraConfig } from '../../src/engine/model/lora/lora-config';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { testModel, type TestModel } from './decode-helpers';

export const OPTIMIZER: OptimizerConfig = { beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };

export interface TrainFixture extends TestModel {
  engine: GpuTrainingEngine;
}

export async function trainFixture(
  ctx: KernelContext,
  arch: Architecture,
  dtype: DType,
  seed: number,
  opts: Partial<Omit<GpuTrainingEngineOptions, 'kernelContext' | 'weights'>> = {},
): Promise<TrainFixture> {
  const model = await testModel(ctx, arch, dtype, seed);
  const engine = new GpuTrainingEngine({ kernelContext: ctx, weights: async () => model.weights, log: () => {}, ...opts });
  return { ...model, engine };
}

export function loraConfig(modules: readonly LoraModule[], rank = 4, alpha = 8): LoraConfig {
  return { rank, alpha, targetModules: [...modules], useRslora: false };
}

/** A session starting from a random (non-zero B) adapter, so every LoRA term is visible. */
export function randomSession(
  f: TrainFixture,
  lora: LoraConfig,
  seed: number,
  optimizer = OPTIMIZER,
): { session: GpuTrainingSession; adapter: TensorData[] } {
  const adapter = randomLoraTensors(f.cfg, lora.rank, lora.targetModules as LoraModule[], seed, 'f32', 0.5);
  return { session: f.engine.sessionFor(f.weights, { lora, initialAdapter: adapter, optimizerState: null, optimizer, seed }), adapter };
}

/**
 * Six SFT steps at `lr` from a fresh adapter (B = 0) on seeded sequences of `lengths` (SFT fields
 * only): the session, the sequences and the loss of each step.
 */
export async function sftFromFreshAdapter(
  f: TrainFixture,
  lora: LoraConfig,
  o: { seed: number; dataSeed: number; lengths: number[]; lr: number },
) {
  const session = f.engine.sessionFor(f.weights, { lora, initialAdapter: null, optimizerState: null, optimizer: OPTIMIZER, seed: o.seed });
  const seqs = randomSequences(f.cfg.vocabSize, o.lengths, o.dataSeed).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
  const losses: number[] = [];
  for (let i = 0; i < 6; i++) losses.push((await session.step(seqs, { kind: 'sft' }, o.lr)).loss);
  return { session, seqs, losses };
}

/** Seeded sequences of the given lengths: random tokens, a trainable tail, RL fields filled. */
export function randomSequences(V: number, lengths: number[], seed: number, groups?: number[]): TrainingSequence[] {
  const rng = new Rng(seed);
  return lengths.map((T, b) => {
    const trainable = new Uint8Array(T);
    const prompt = Math.max(1, Math.floor(T / 3));
    for (let i = prompt; i < T; i++) trainable[i] = rng.uniform() < 0.9 ? 1 : 0;
    const adv = rng.normal();
    return {
      tokens: Uint32Array.from({ length: T }, () => rng.int(V)),
      trainable,
      oldLogprobs: Float32Array.from({ length: T }, (_, i) => (trainable[i] && rng.uniform() < 0.8 ? -3 - 2 * rng.uniform() : NaN)),
      advantages: new Float32Array(T).fill(adv),
      weights: new Float32Array(T).fill(0.5 + rng.uniform()),
      importanceGroup: groups?.[b],
    };
  });
}

/**
 * Sampler logprobs near the policy's (within +-0.4, some unknown): importance ratios around 1, so
 * PPO's clipping cuts some tokens and passes others, as in a real RL step. Random old logprobs
 * would put every ratio far outside the clip range.
 */
export function nearPolicy(seqs: TrainingSequence[], policy: Float32Array[], seed: number): void {
  const rng = new Rng(seed);
  seqs.forEach((s, b) => {
    for (let i = 0; i < s.tokens.length; i++)
      s.oldLogprobs![i] = s.trainable[i] && rng.uniform() < 0.85 ? policy[b][i] + 0.8 * (rng.uniform() - 0.5) : NaN;
  });
}

/** log p(token i | tokens < i) from the reference model with the adapter (NaN at 0). */
export function referenceLogprobs(ref: ReferenceModel, lora: LoraConfig, adapter: TensorData[], seqs: TrainingSequence[]): Float32Array[] {
  const rl = referenceLora(ref.config, { rank: lora.rank, alpha: lora.alpha, useRslora: lora.useRslora }, adapter);
  const V = ref.config.vocabSize;
  return seqs.map((s) => {
    const T = s.tokens.length;
    const logits = ref.forward(Array.from(s.tokens), undefined, rl);
    const lp = new Float32Array(T);
    lp[0] = NaN;
    if (T > 1) crossEntropyForward(lp.subarray(1), null, logits, Array.from(s.tokens.subarray(1)), T - 1, V);
    return lp;
  });
}

/** The reference's loss and summed LoRA gradients of one step, in the trainer's flat layout. */
export function referenceStep(ref: ReferenceModel, plan: LoraPlan, adapter: TensorData[], seqs: TrainingSequence[], loss: LossSpec) {
  const lora = plan.config;
  const rl = referenceLora(ref.config, { rank: lora.rank, alpha: lora.alpha, useRslora: lora.useRslora }, adapter);
  const newLp = referenceLogprobs(ref, lora, adapter, seqs);
  const step = stepLoss(seqs, newLp, loss);
  const grads = new Float64Array(plan.elements);
  seqs.forEach((s, b) => {
    const T = s.tokens.length;
    // Position t predicts token t + 1.
    const coeffs = Float64Array.from({ length: T }, (_, t) => (t + 1 < T ? step.coefficients[b][t + 1] : 0));
    const r = lossAndGradients(ref, rl, Array.from(s.tokens), coeffs, 'f32');
    for (const layer of plan.layers) {
      for (const group of Object.values(layer)) {
        for (const m of group?.modules ?? []) {
          const gm = r.grads!.get(m.layer, m.module)!;
          for (let i = 0; i < gm.A.length; i++) grads[m.aOffset + i] += gm.A[i];
          for (let i = 0; i < gm.B.length; i++) grads[m.bOffset + i] += gm.B[i];
        }
      }
    }
  });
  return { loss: step.loss, grads, logprobs: newLp };
}

/** Max |x|, for tolerances relative to a gradient's scale. */
export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}
