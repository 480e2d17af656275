/**
 * Small random models for tests: a ModelConfig per architecture with test-sized shapes, and seeded
 * random weights in any dtype whose activations stay O(1) through the layers (Linear weights
 * ~ N(0, 1/in), norms ~ 1 + noise). Not the bundled models (scripts/make-models.ts makes those).
 */
import type { Architecture, ModelConfig } from '../model/config/model-config';
import type { DType } from '../tensor/dtype';
import { tensorFromF32 } from '../tensor/tensor-data';
import { fullAttentionLayers } from '../model/config/hf-config';
import type { TensorData } from '../tensor/tensor-data';
import { planParameters } from '../model/weights/parameter-plan';
import { Rng } from '../tensor/random';

/**
 * A test-sized config of `arch` (Llama: untied, GQA 2; Qwen2: qkv bias; Qwen3: q/k norm, explicit HS;
 * Phi-3: fused projections, partial rotary, LongRoPE; SmolLM3: a NoPE layer).
 */
export function testConfig(arch: Architecture, overrides: Partial<ModelConfig> = {}): ModelConfig {
  const base: ModelConfig = {
    arch,
    hiddenSize: 96,
    numLayers: 2,
    numHeads: 6,
    numKvHeads: 2,
    headDim: 16,
    intermediateSize: 136,
    vocabSize: 211,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropeScaling: null,
    slidingWindow: null,
    layerTypes: [],
    maxPositionEmbeddings: 2048,
    tieWordEmbeddings: arch !== 'llama' && arch !== 'phi3',
    attentionBias: arch === 'qwen2',
    outputBias: false,
    mlpBias: false,
    qkNorm: arch === 'qwen3',
    hiddenAct: 'silu',
    bosTokenId: null,
    eosTokenIds: [0],
    torchDtype: null,
  };
  if (arch === 'qwen3') {
    base.headDim = 24; // explicit head_dim != hidden / heads, as in Qwen3
    base.rmsNormEps = 1e-6;
  }
  // SmolLM3: the second layer is a NoPE layer (no_rope_layers [1, 0]).
  if (arch === 'smollm3') base.ropeLayers = [true, false];
  const config = { ...base, ...overrides };
  // Phi-3's RoPE follows the final head dim unless the test sets its own scaling.
  if (arch === 'phi3') {
    Object.assign(config, phi3TestRope(config.headDim), overrides.ropeScaling !== undefined ? { ropeScaling: overrides.ropeScaling } : {});
  }
  return { ...config, layerTypes: overrides.layerTypes ?? fullAttentionLayers(config.numLayers) };
}

/**
 * Phi-3's RoPE at test size: fused projections, partial rotary 0.75 and LongRoPE whose long factors
 * start at position 24, so short tests cross the switch.
 */
export function phi3TestRope(headDim: number): Partial<ModelConfig> {
  const rotaryDim = 2 * Math.floor((headDim * 3) / 8); // 0.75 of the head, kept even
  const half = rotaryDim / 2;
  return {
    fusedProjections: true,
    rotaryDim,
    ropeScaling: {
      type: 'longrope',
      shortFactor: Array.from({ length: half }, (_, i) => 1 + 0.05 * i),
      longFactor: Array.from({ length: half }, (_, i) => 1.5 + 0.4 * i),
      originalMaxPositionEmbeddings: 24,
      attentionFactor: Math.sqrt(1 + Math.log(2048 / 24) / Math.log(24)),
    },
  };
}

/** Seeded random tensors for every name of the config's parameter plan, stored in `dtype`. */
export function randomModelTensors(cfg: ModelConfig, dtype: DType, seed: number): TensorData[] {
  const rng = new Rng(seed);
  return planParameters(cfg).map(({ name, shape }) => {
    const n = shape.reduce((a, b) => a * b, 1);
    let values: Float32Array;
    if (name.endsWith('norm.weight')) {
      values = Float32Array.from({ length: n }, () => 1 + 0.2 * rng.normal());
    } else if (name.endsWith('.bias')) {
      values = rng.normals(n, 0.1);
    } else if (name === 'model.embed_tokens.weight' || name === 'lm_head.weight') {
      values = rng.normals(n, 1);
    } else {
      values = rng.normals(n, 1 / Math.sqrt(shape[1]));
    }
    return tensorFromF32(name, shape, values, dtype);
  });
}
