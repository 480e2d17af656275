// The Gemma 3 checkpoint that transformers' golden logprobs are made on (issue 21): gemma-3-270m's
// config.json with its per-layer shape kept (hidden 640, intermediate 2048, 4 heads, 1 KV head,
// head_dim 256, query_pre_attn_scalar 256) and only the depth, window and vocabulary cut: 6 layers
// (5 sliding, the 6th global), a 16-token window, 512 ids. The global layer carries the linear
// rope_scaling of the larger Gemma 3 checkpoints (4B and up) so that path is checked too. Weights are
// seeded bf16, made here so that nothing but the golden numbers is committed:
// scripts/golden/gemma3-checkpoint.ts writes them as a checkpoint folder, and
// scripts/golden/gemma3_transformers.py runs transformers (and peft) on it.
import type { ModelConfig } from '../../../src/engine/model/config';
import { parseModelConfig } from '../../../src/engine/model/hf-config';
import { writeSafetensors } from '../../../src/engine/model/safetensors-writer';
import type { TensorData } from '../../../src/engine/model/tensor';
import { LORA_MODULES, randomLoraTensors } from '../../../src/engine/reference/lora';
import { Rng } from '../../../src/engine/reference/random';
import { adapterFiles } from '../../../src/service/training/adapter-files';
import { gemma3Fixture, randomGemma3Tensors } from './gemma3-fixtures';

const LAYERS = 6;

export const GOLDEN_CONFIG_JSON: Record<string, unknown> = {
  ...gemma3Fixture('gemma-3-270m'),
  num_hidden_layers: LAYERS,
  layer_types: Array.from({ length: LAYERS }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention')),
  sliding_window: 16,
  vocab_size: 512,
  rope_scaling: { rope_type: 'linear', factor: 8.0 },
};

export const goldenConfig = (): ModelConfig => parseModelConfig(GOLDEN_CONFIG_JSON);

/** 40 tokens from <bos>: more than twice the window, so the sliding layers drop keys. */
export const GOLDEN_PROMPT: readonly number[] = (() => {
  const rng = new Rng(2103);
  return [2, ...Array.from({ length: 39 }, () => 3 + rng.int(509))];
})();

export const goldenTensors = (): TensorData[] => randomGemma3Tensors(goldenConfig(), 'bf16', 21);

/** The checkpoint's model.safetensors as written for transformers (its sha256 is in the golden file). */
export const goldenSafetensors = (tensors: readonly TensorData[]): Uint8Array => writeSafetensors(tensors, { format: 'pt' });

/** A rank-8 adapter on every module, B not zero, as Hearth exports a checkpoint (PEFT's two files). */
export const GOLDEN_LORA = { rank: 8, alpha: 16, targetModules: [...LORA_MODULES], useRslora: false };
export const goldenLoraTensors = (): TensorData[] => randomLoraTensors(goldenConfig(), GOLDEN_LORA.rank, LORA_MODULES, 22, 'f32', 0.2);
export const goldenAdapterFiles = (tensors: readonly TensorData[]) => adapterFiles('hearth/gemma3-golden', GOLDEN_LORA, tensors);
