// A TrainingEngine on the CPU built from the reference training pass (reference/model-train.ts),
// the engine's loss coefficients (train/loss.ts) and a plain AdamW: slow but real math, so the
// trainer's tests see losses that really fall and adapters that really change. The GPU engine
// (engine/train) is checked against the same reference in test/gpu.
import type { ServedModel, InferenceEngine } from '../../../src/engine/generate/types';
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { referenceLora } from '../../../src/engine/reference/lora';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { lossAndGradients } from '../../../src/engine/reference/model-train';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';
import {
  flatFromSuffixed,
  initLoraParameters,
  loraFromTensors,
  loraToTensors,
  planLora,
  type LoraPlan,
} from '../../../src/engine/train/lora-plan';
import { stepEntropy, stepLoss } from '../../../src/engine/train/loss';
import type {
  LossSpec,
  StartSessionOptions,
  StepMetrics,
  TrainingEngine,
  TrainingSequence,
  TrainingSession,
} from '../../../src/engine/train/types';
import { bundledTokenizer } from './fixtures';

/** A one-layer Llama over the tiny-chat vocabulary (so real token ids fit), seeded. */
export function tinyTrainModel(seed = 7): ReferenceModel {
  const cfg: ModelConfig = testConfig('llama', {
    vocabSize: 4096,
    hiddenSize: 32,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    headDim: 16,
    intermediateSize: 48,
    eosTokenIds: [2],
  });
  return new ReferenceModel(cfg, randomModelTensors(cfg, 'f32', seed));
}

/** The base model as the trainer loads it: tiny-chat's tokenizer and template over `model`'s config. */
export function servedFor(model: ReferenceModel, id = 'hearth/tiny-chat'): InferenceEngine {
  const t = bundledTokenizer('tiny-chat');
  const served = {
    id,
    config: model.config,
    tokenizer: t.tokenizer,
    chatTemplates: { forRequest: () => t.template },
    eosTokenIds: [2, 0],
    maxModelLen: 2048,
  } as unknown as ServedModel;
  return {
    capabilities: {
      backend: 'webgpu',
      description: 'reference',
      training: true,
      beamSearch: true,
      promptLogprobs: true,
      structuredOutputs: true,
      loraAdapters: true,
      multiTokenBadWords: true,
      missing: '',
    },
    loadModel: async () => served,
    generate: () => {
      throw new Error('the reference engine does not generate');
    },
  };
}

export class ReferenceTrainingEngine implements TrainingEngine {
  sessions = 0;
  constructor(readonly model: ReferenceModel) {}
  async startSession(options: StartSessionOptions): Promise<TrainingSession> {
    this.sessions++;
    return new ReferenceTrainingSession(this.model, options);
  }
}

class ReferenceTrainingSession implements TrainingSession {
  readonly lora;
  readonly parameterCount: number;
  private readonly plan: LoraPlan;
  private readonly params: Float32Array;
  private readonly m: Float32Array;
  private readonly v: Float32Array;
  private t: number;

  constructor(
    private readonly model: ReferenceModel,
    private readonly o: StartSessionOptions,
  ) {
    this.lora = o.lora;
    this.plan = planLora(model.config, o.lora);
    this.parameterCount = this.plan.elements;
    this.params = o.initialAdapter ? loraFromTensors(this.plan, model.config, o.initialAdapter) : initLoraParameters(this.plan, o.seed);
    this.m = o.optimizerState ? flatFromSuffixed(this.plan, o.optimizerState.tensors, '.exp_avg') : new Float32Array(this.plan.elements);
    this.v = o.optimizerState ? flatFromSuffixed(this.plan, o.optimizerState.tensors, '.exp_avg_sq') : new Float32Array(this.plan.elements);
    this.t = o.optimizerState?.step ?? 0;
  }

  private adapter() {
    return referenceLora(this.model.config, { rank: this.o.lora.rank, alpha: this.o.lora.alpha }, loraToTensors(this.plan, this.params));
  }

  async logprobs(sequences: TrainingSequence[]): Promise<Float32Array[]> {
    const lora = this.adapter();
    return sequences.map((s) => {
      const out = lossAndGradients(this.model, lora, [...s.tokens], new Float64Array(s.tokens.length));
      return Float32Array.from({ length: s.tokens.length }, (_, i) => (i === 0 ? NaN : out.logprobs[i - 1]));
    });
  }

  async step(sequences: TrainingSequence[], loss: LossSpec, learningRate: number): Promise<StepMetrics> {
    const lora = this.adapter();
    const newLogprobs = await this.logprobs(sequences);
    const sl = stepLoss(sequences, newLogprobs, loss);
    const grad = new Float32Array(this.plan.elements);
    const entropies: Float32Array[] = [];
    sequences.forEach((s, b) => {
      const coeffs = Float64Array.from({ length: s.tokens.length }, (_, t) => (t + 1 < s.tokens.length ? sl.coefficients[b][t + 1] : 0));
      const out = lossAndGradients(this.model, lora, [...s.tokens], coeffs);
      entropies.push(Float32Array.from({ length: s.tokens.length }, (_, i) => (i === 0 ? 0 : out.entropy[i - 1])));
      for (const { layer, module, weights } of out.grads!.entries()) {
        const g = this.plan.layers[layer];
        const mod = Object.values(g)
          .flatMap((grp) => grp?.modules ?? [])
          .find((x) => x.module === module)!;
        for (let i = 0; i < weights.A.length; i++) grad[mod.aOffset + i] += weights.A[i];
        for (let i = 0; i < weights.B.length; i++) grad[mod.bOffset + i] += weights.B[i];
      }
    });
    const norm = Math.sqrt(grad.reduce((a, g) => a + g * g, 0));
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = this.o.optimizer;
    const clip = maxGradNorm > 0 && norm > maxGradNorm ? maxGradNorm / norm : 1;
    this.t++;
    for (let i = 0; i < grad.length; i++) {
      const g = grad[i] * clip;
      this.m[i] = beta1 * this.m[i] + (1 - beta1) * g;
      this.v[i] = beta2 * this.v[i] + (1 - beta2) * g * g;
      const mh = this.m[i] / (1 - beta1 ** this.t);
      const vh = this.v[i] / (1 - beta2 ** this.t);
      this.params[i] -= learningRate * (mh / (Math.sqrt(vh) + eps) + weightDecay * this.params[i]);
    }
    const numTokens = sequences.reduce((n, s) => n + s.tokens.length, 0);
    return {
      loss: sl.loss,
      policyLoss: sl.policyLoss ?? undefined,
      maxRatioDeviation: sl.maxRatioDeviation ?? undefined,
      gradNorm: norm,
      entropy: stepEntropy(sequences, entropies, loss) ?? undefined,
      learningRate,
      numTrainableTokens: sl.trainableTokens,
      numTokens,
      tokensPerSecond: 1000,
    };
  }

  async exportAdapter(): Promise<TensorData[]> {
    return loraToTensors(this.plan, this.params);
  }

  async exportOptimizerState() {
    const tensors = [...loraToTensors(this.plan, this.m, '.exp_avg'), ...loraToTensors(this.plan, this.v, '.exp_avg_sq')];
    return { step: this.t, tensors };
  }

  dispose(): void {}
}
