/**
 * The whole-model LoRA backward (reference/model-train.ts) against central finite differences, for
 * Llama (untied, GQA 2), Qwen2 (q/k/v bias, tied embeddings), Qwen3 (q/k norm, explicit head
 * dim) and Gemma 3 (its config format, test-sized), with LoRA on all seven projections or on a subset, in f64 (activations and adapter).
 *
 * Loss: sum_t c_t * -log p(token_{t+1} | ..t) with mixed-sign coefficients and an untrained position
 * (c = 0), i.e. the shape of every SFT and RL loss. Per adapted (layer, module): the derivative along
 * a random direction of the whole A and of the whole B, plus 6 single entries of each.
 * Tolerance: atol 1e-7 + rtol 1e-5 (h = 1e-6 in f64: FD error ~1e-10). d(embedding output) is
 * checked through the embedding rows on Llama, whose lm_head is not the embedding.
 * Also: with no adapter, and with one, the training forward gives ReferenceModel's logits.
 */
import { describe, expect, it } from 'vitest';
import type { Architecture, ModelConfig } from '../../../src/engine/model/config/model-config';
import { expectClose } from '../../../src/engine/reference/check';
import { LORA_MODULES, loraModulesOf, type LoraModule } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors, ReferenceLora, referenceLora } from '../../../src/engine/reference/lora';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { lossAndGradients, trainForward } from '../../../src/engine/reference/model-train';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';
import { Rng } from '../../../src/engine/tensor/random';
import { checkDirectional, checkGradient, sampleIndices } from './finite-diff';
import { randomGemma3Tensors, tinyGemma3Config } from '../model/gemma3-fixtures';

const TOL = { atol: 1e-7, rtol: 1e-5 };

/** Tiny shapes: every finite difference is a full forward, so keep them small. */
function tinyConfig(arch: Architecture): ModelConfig {
  return testConfig(arch, {
    hiddenSize: 24,
    numHeads: 4,
    numKvHeads: 2,
    headDim: arch === 'qwen3' ? 8 : 6,
    intermediateSize: 20,
    vocabSize: 37,
    numLayers: 2,
  });
}

/** The adapter copied into f64 arrays, so perturbations are not rounded to f32. */
function toF64(lora: ReferenceLora): ReferenceLora {
  const out = new ReferenceLora(lora.rank, lora.scale);
  for (const { layer, module, weights } of lora.entries())
    out.set(layer, module, { A: Float64Array.from(weights.A), B: Float64Array.from(weights.B) });
  return out;
}

const CASES: Array<{ arch: Architecture; modules: readonly LoraModule[]; rank: number }> = [
  { arch: 'llama', modules: LORA_MODULES, rank: 3 },
  { arch: 'qwen2', modules: ['q_proj', 'v_proj', 'down_proj'], rank: 2 },
  { arch: 'qwen3', modules: LORA_MODULES, rank: 2 },
  // Phi-3: PEFT's fused modules, partial rotary; SmolLM3: a NoPE layer.
  { arch: 'phi3', modules: ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'], rank: 2 },
  { arch: 'smollm3', modules: ['q_proj', 'k_proj', 'up_proj'], rank: 2 },
];

describe('finite differences: whole-model LoRA gradients (f64)', () => {
  for (const { arch, modules, rank } of CASES) {
    it(`${arch}: LoRA rank ${rank} on ${modules.join(', ')}`, () => {
      const cfg = tinyConfig(arch);
      const model = new ReferenceModel(cfg, randomModelTensors(cfg, 'f32', 31));
      const lora = toF64(referenceLora(cfg, { rank, alpha: 2 * rank }, randomLoraTensors(cfg, rank, modules, 32, 'f32', 0.5)));
      const tokens = [1, 17, 5, 36, 2, 9, 30];
      const coeffs = [0.4, -0.7, 0, 1.1, 0.25, -0.3, 0];
      const lossOf = () => lossAndGradients(model, lora, tokens, coeffs, 'f64').loss;
      const { grads, loss } = lossAndGradients(model, lora, tokens, coeffs, 'f64');
      expect(Number.isFinite(loss)).toBe(true);
      const rng = new Rng(33);
      let adapted = 0;
      for (const { layer, module, weights } of lora.entries()) {
        adapted++;
        const g = grads!.get(layer, module)!;
        for (const which of ['A', 'B'] as const) {
          const label = `${arch} layer ${layer} ${module} d${which}`;
          const p = weights[which] as Float64Array;
          let norm = 0;
          for (const x of g[which]) norm += x * x;
          expect(norm, `${label} is all zero`).toBeGreaterThan(0);
          checkDirectional(label, p, g[which], lossOf, rng, TOL);
          checkGradient(label, p, g[which], lossOf, { ...TOL, indices: sampleIndices(rng, p.length, 6) });
        }
      }
      expect(adapted).toBe(cfg.numLayers * modules.length);
    });
  }

  it('gemma3 (sandwich norms, GeGLU, scaled embeddings and scores, two RoPE bases): LoRA rank 2 on every module', () => {
    const cfg = tinyGemma3Config({
      hidden_size: 24,
      intermediate_size: 20,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 8,
      query_pre_attn_scalar: 12,
      vocab_size: 37,
      num_hidden_layers: 2,
      layer_types: ['sliding_attention', 'full_attention'],
    });
    const model = new ReferenceModel(cfg, randomGemma3Tensors(cfg, 'f32', 34));
    const lora = toF64(referenceLora(cfg, { rank: 2, alpha: 4 }, randomLoraTensors(cfg, 2, LORA_MODULES, 35, 'f32', 0.5)));
    const tokens = [1, 17, 5, 36, 2, 9, 30];
    const coeffs = [0.4, -0.7, 0, 1.1, 0.25, -0.3, 0];
    const lossOf = () => lossAndGradients(model, lora, tokens, coeffs, 'f64').loss;
    const { grads } = lossAndGradients(model, lora, tokens, coeffs, 'f64');
    const rng = new Rng(36);
    for (const { layer, module, weights } of lora.entries()) {
      for (const which of ['A', 'B'] as const) {
        const label = `gemma3 layer ${layer} ${module} d${which}`;
        const p = weights[which] as Float64Array;
        checkDirectional(label, p, grads!.get(layer, module)![which], lossOf, rng, TOL);
        checkGradient(label, p, grads!.get(layer, module)![which], lossOf, { ...TOL, indices: sampleIndices(rng, p.length, 4) });
      }
    }
    // The training forward is the inference reference's.
    expectClose(
      trainForward(model, lora, tokens).logits,
      model.forward(tokens, undefined, lora),
      { atol: 1e-5, rtol: 1e-5 },
      'gemma3 logits',
    );
  });

  it('llama: d(embedding output) against the embedding rows of distinct tokens', () => {
    const cfg = tinyConfig('llama');
    const model = new ReferenceModel(cfg, randomModelTensors(cfg, 'f32', 41));
    const lora = toF64(referenceLora(cfg, { rank: 2, alpha: 4 }, randomLoraTensors(cfg, 2, ['k_proj', 'o_proj', 'up_proj'], 42)));
    const tokens = [3, 8, 21, 13, 34];
    const coeffs = [1, -0.5, 0.75, 2, 0];
    const { dEmbedding } = lossAndGradients(model, lora, tokens, coeffs, 'f64');
    const C = cfg.hiddenSize;
    const lossOf = () => lossAndGradients(model, lora, tokens, coeffs, 'f64').loss;
    // wte is f32: the FD step is the rounded difference (finite-diff.ts), h = 1e-3 leaves O(1e-6).
    const rng = new Rng(43);
    tokens.forEach((tok, t) => {
      const analytic = new Float64Array(model.wte.length);
      for (let c = 0; c < C; c++) analytic[tok * C + c] = dEmbedding[t * C + c];
      const indices = sampleIndices(rng, C, 5).map((c) => tok * C + c);
      checkGradient(`dEmbedding position ${t}`, model.wte, analytic, lossOf, { indices, h: 1e-3, atol: 1e-5, rtol: 1e-3 });
    });
  });

  it('the training forward gives the inference reference logits, with and without an adapter', () => {
    for (const arch of ['llama', 'qwen2', 'qwen3', 'phi3', 'smollm3'] as const) {
      const cfg = testConfig(arch);
      const model = new ReferenceModel(cfg, randomModelTensors(cfg, 'bf16', 51));
      const tokens = [4, 77, 3, 150, 9, 9, 200, 31];
      expectClose(trainForward(model, null, tokens).logits, model.forward(tokens), { atol: 1e-5, rtol: 1e-5 }, `${arch} logits`);
      const lora = referenceLora(cfg, { rank: 4, alpha: 8 }, randomLoraTensors(cfg, 4, loraModulesOf(cfg), 52));
      const withLora = trainForward(model, lora, tokens).logits;
      expectClose(withLora, model.forward(tokens, undefined, lora), { atol: 1e-5, rtol: 1e-5 }, `${arch} logits with LoRA`);
      let moved = 0;
      const base = model.forward(tokens);
      for (let i = 0; i < base.length; i++) moved = Math.max(moved, Math.abs(base[i] - withLora[i]));
      expect(moved, 'the adapter changes the logits').toBeGreaterThan(1e-2);
    }
  });
});
