// Baking an adapter into base weights (the bundled model's last step): the merged model gives the
// logits of the base model with the adapter applied, in the reference implementation.
import { describe, expect, it } from 'vitest';
import { tensorFromF32, tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { referenceLora } from '../../../src/engine/reference/lora';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';
import { initLoraParameters, loraToTensors, planLora } from '../../../src/engine/train/lora-plan';
import { mergeLora } from '../../../scripts/demo/merge-lora';

describe('mergeLora', () => {
  it("W + s B A reproduces the adapted model's logits", () => {
    const cfg = testConfig('llama', { vocabSize: 61, numLayers: 2 });
    const base = randomModelTensors(cfg, 'f32', 5);
    const lora = { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'down_proj'], useRslora: false };
    const plan = planLora(cfg, lora);
    // Non-zero B too, so every adapted module changes the output.
    const values = initLoraParameters(plan, 9).map((v, i) => v || 0.05 * Math.sin(i));
    const adapter = loraToTensors(plan, values);
    const tokens = [3, 17, 42, 8, 60, 1];
    const adapted = new ReferenceModel(cfg, base).forward(tokens, undefined, referenceLora(cfg, lora, adapter));
    const merged = new ReferenceModel(cfg, mergeLora(base, adapter, lora)).forward(tokens);
    const plain = new ReferenceModel(cfg, base).forward(tokens);
    let maxDiff = 0;
    let moved = 0;
    for (let i = 0; i < merged.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(merged[i] - adapted[i]));
      moved = Math.max(moved, Math.abs(plain[i] - adapted[i]));
    }
    expect(moved).toBeGreaterThan(1e-2);
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it("keeps the base tensors' dtype and refuses an adapter for modules the model lacks", () => {
    const cfg = testConfig('llama', { vocabSize: 61, numLayers: 1 });
    const base = randomModelTensors(cfg, 'bf16', 5);
    const lora = { rank: 2, alpha: 4, targetModules: ['q_proj'], useRslora: false };
    const adapter = loraToTensors(planLora(cfg, lora), initLoraParameters(planLora(cfg, lora), 1));
    expect(mergeLora(base, adapter, lora).every((t, i) => t.dtype === base[i].dtype && t.name === base[i].name)).toBe(true);
    const stray = tensorFromF32(
      'base_model.model.model.layers.5.self_attn.q_proj.lora_A.weight',
      [2, cfg.hiddenSize],
      tensorToF32(adapter[0]),
      'f32',
    );
    const strayB = tensorFromF32(
      'base_model.model.model.layers.5.self_attn.q_proj.lora_B.weight',
      [cfg.numHeads * cfg.headDim, 2],
      new Float32Array(2 * cfg.numHeads * cfg.headDim),
      'f32',
    );
    expect(() => mergeLora(base, [...adapter, stray, strayB], lora)).toThrow(/has no model.layers.5/);
  });
});
