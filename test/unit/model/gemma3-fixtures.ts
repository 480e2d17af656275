// Tiny random Gemma 3 checkpoints in Gemma 3's exact config format: google/gemma-3-270m's config.json
// (fixtures/gemma-3-270m.config.json, as published) with only the sizes scaled down, parsed by the
// engine's own parseModelConfig, and seeded random weights whose norms are near 0 as Gemma stores
// them (its RMSNorm multiplies by 1 + w). Shared by the unit (llama.cpp), GPU and training tests.
import { readFileSync } from 'node:fs';
import type { DType, ModelConfig } from '../../../src/engine/model/config';
import { tensorFromF32 } from '../../../src/engine/model/dtype';
import { parseModelConfig } from '../../../src/engine/model/hf-config';
import type { TensorData } from '../../../src/engine/model/tensor';
import { planParameters } from '../../../src/engine/model/weights';
import { Rng } from '../../../src/engine/reference/random';

export const gemma3Fixture = (name: 'gemma-3-270m' | 'gemma-3-1b-it'): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}.config.json`, import.meta.url), 'utf8'));

/** gemma-3-270m's config.json with test-sized shapes (6 layers: 5 sliding, the 6th global). */
export function tinyGemma3Json(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const numLayers = (overrides.num_hidden_layers as number | undefined) ?? 6;
  return {
    ...gemma3Fixture('gemma-3-270m'),
    hidden_size: 96,
    intermediate_size: 160,
    num_hidden_layers: numLayers,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 32,
    query_pre_attn_scalar: 32,
    vocab_size: 264,
    sliding_window: 64,
    max_position_embeddings: 512,
    layer_types: Array.from({ length: numLayers }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention')),
    ...overrides,
  };
}

export function tinyGemma3Config(overrides: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig(tinyGemma3Json(overrides));
}

/** Seeded weights for every tensor of the plan: Linear ~ N(0, 1/in), embedding ~ N(0, 1/sqrt(C))
 *  (Gemma scales it back up by sqrt(C)), norms ~ N(0, 0.2) (the kernels apply 1 + w). */
export function randomGemma3Tensors(cfg: ModelConfig, dtype: DType, seed: number): TensorData[] {
  const rng = new Rng(seed);
  return planParameters(cfg).map(({ name, shape }) => {
    const n = shape.reduce((a, b) => a * b, 1);
    let values: Float32Array;
    if (name.endsWith('norm.weight')) values = rng.normals(n, 0.2);
    else if (name === 'model.embed_tokens.weight') values = rng.normals(n, 1 / Math.sqrt(cfg.hiddenSize));
    else values = rng.normals(n, 1 / Math.sqrt(shape[1]));
    return tensorFromF32(name, shape, values, dtype);
  });
}
