// The Gemma 3 checkpoint that transformers' golden logprobs are made on (issue 21): gemma-3-270m's
// config.json with its per-layer shape kept (hidden 640, intermediate 2048, 4 heads, 1 KV head,
// head_dim 256, query_pre_attn_scalar 256) and only the depth, window and vocabulary cut: 6 layers
// (5 sliding, the 6th global), a 16-token window, 512 ids. The global layer carries the linear
// rope_scaling of the larger Gemma 3 checkpoints (4B and up) so that path is checked too. Weights are
// seeded bf16, made here so that nothing but the golden numbers is committed:
// scripts/golden/gemma3-checkpoint.ts writes them as a checkpoint folder, and
// scripts/golden/gemma3_transformers.py runs transformers (and peft) on it.
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { tensorFromF32 } from '../../../src/engine/tensor/tensor-data';
import { adamwStep } from '../../../src/engine/reference/adamw';
import { LORA_MODULES, loraModuleDims, loraTensorName } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors, referenceLora } from '../../../src/engine/reference/lora';
import type { ReferenceModel } from '../../../src/engine/reference/model';
import { lossAndGradients } from '../../../src/engine/reference/model-train';
import { Rng } from '../../../src/engine/tensor/random';
import { adapterFiles } from '../../../src/service/adapters/peft-files';
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

/** A rank-8 adapter on every module, as a checkpoint of an SFT job is exported (PEFT's two files). */
export const GOLDEN_LORA = { rank: 8, alpha: 16, targetModules: [...LORA_MODULES], useRslora: false };
export const goldenAdapterFiles = (tensors: readonly TensorData[]) => adapterFiles('hearth/gemma3-golden', GOLDEN_LORA, tensors);

/**
 * The adapter after one SFT step of Hearth's reference trainer (the oracle the GPU trainer's
 * gradients and AdamW are tested against, train-gemma3.test.ts) on the golden prompt: from a fresh
 * adapter (seeded A, B zero), the mean next-token loss over the prompt, AdamW at lr 1e-2.
 */
export function goldenSftAdapter(model: ReferenceModel): TensorData[] {
  const cfg = model.config;
  const fresh = randomLoraTensors(cfg, GOLDEN_LORA.rank, LORA_MODULES, 22, 'f32', 0);
  const lora = referenceLora(cfg, GOLDEN_LORA, fresh);
  const T = GOLDEN_PROMPT.length;
  const coeffs = Float64Array.from({ length: T }, (_, t) => (t + 1 < T ? 1 / (T - 1) : 0));
  const { grads } = lossAndGradients(model, lora, GOLDEN_PROMPT, coeffs);
  const adamw = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, step: 1 };
  const out: TensorData[] = [];
  for (const { layer, module, weights } of lora.entries()) {
    const g = grads!.get(layer, module)!;
    const d = loraModuleDims(cfg, module);
    for (const [which, w, dw, shape] of [
      ['A', weights.A, g.A, [GOLDEN_LORA.rank, d.in]],
      ['B', weights.B, g.B, [d.out, GOLDEN_LORA.rank]],
    ] as const) {
      const p = Float32Array.from(w);
      adamwStep(p, new Float32Array(p.length), new Float32Array(p.length), dw, 1, adamw);
      out.push(tensorFromF32(loraTensorName(layer, module, which), [...shape], p, 'f32'));
    }
  }
  return out;
}
