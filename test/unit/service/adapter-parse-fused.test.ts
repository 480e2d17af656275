// Phi-3 adapters as PEFT writes them (target_modules on the fused qkv_proj / gate_up_proj Linears of
// Phi3ForCausalLM): the adapter config is read with those names, a regex selects them, a model
// registered on a Phi-3 base gets them as its default LoRA targets, and the engine reads the
// adapter's tensors by PEFT key for a Phi-3 config but refuses them for a Llama one (and the reverse).
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { groupLoraTensors } from '../../../src/engine/model/lora/adapter-tensors';
import { loraModulesOf } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors } from '../../../src/engine/reference/lora';
import { testConfig } from '../../../src/engine/reference/random-model';
import { parseAdapterConfig } from '../../../src/service/adapters/parse';
import { defaultLoraFor } from '../../../src/service/models';

/** adapter_config.json as PEFT 0.13 saves it for a Phi-3 LoRA (the fields Hearth reads, and a few it ignores). */
const PHI3_ADAPTER_CONFIG = {
  base_model_name_or_path: 'microsoft/Phi-4-mini-instruct',
  bias: 'none',
  fan_in_fan_out: false,
  inference_mode: true,
  lora_alpha: 16,
  lora_dropout: 0.05,
  peft_type: 'LORA',
  r: 8,
  target_modules: ['down_proj', 'gate_up_proj', 'o_proj', 'qkv_proj'],
  task_type: 'CAUSAL_LM',
  use_dora: false,
  use_rslora: false,
};

describe('LoRA adapters of fused (Phi-3) checkpoints', () => {
  it("reads PEFT's Phi-3 adapter_config.json, by list, by regex or as all-linear", () => {
    expect(parseAdapterConfig(PHI3_ADAPTER_CONFIG)).toEqual({
      rank: 8,
      alpha: 16,
      targetModules: ['down_proj', 'gate_up_proj', 'o_proj', 'qkv_proj'],
      useRslora: false,
    });
    const phi3Modules = loraModulesOf(testConfig('phi3'));
    const regex = parseAdapterConfig({ ...PHI3_ADAPTER_CONFIG, target_modules: '.*\\.(qkv_proj|gate_up_proj)' }, undefined, phi3Modules);
    expect(regex.targetModules).toEqual(['qkv_proj', 'gate_up_proj']);
    // "all-linear" means the base model's projections: the fused ones on Phi-3.
    const all = parseAdapterConfig({ ...PHI3_ADAPTER_CONFIG, target_modules: 'all-linear' }, undefined, phi3Modules);
    expect(all.targetModules).toEqual(['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj']);
  });

  it('a model on a Phi-3 base defaults to the fused modules; others keep the separate ones', () => {
    expect(defaultLoraFor('phi3').targetModules).toEqual(['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj']);
    expect(defaultLoraFor('llama').targetModules).toContain('q_proj');
  });

  it("the engine takes a Phi-3 adapter's tensors for a Phi-3 model only", () => {
    const phi3 = testConfig('phi3');
    const tensors = randomLoraTensors(phi3, 4, ['qkv_proj', 'gate_up_proj'], 3);
    const grouped = groupLoraTensors(phi3, 4, tensors);
    expect([...grouped.keys()].sort()).toEqual(['0.gate_up_proj', '0.qkv_proj', '1.gate_up_proj', '1.qkv_proj']);
    const qkv = grouped.get('0.qkv_proj')!;
    expect(qkv.B.shape).toEqual([(phi3.numHeads + 2 * phi3.numKvHeads) * phi3.headDim, 4]);
    const llama = parseModelConfig({ ...PHI3_LIKE_LLAMA });
    expect(() => groupLoraTensors(llama, 4, randomLoraTensors(llama, 4, ['qkv_proj'], 3))).toThrow(
      /adapts qkv_proj, which this llama model does not have/,
    );
    expect(() => groupLoraTensors(phi3, 4, randomLoraTensors(phi3, 4, ['v_proj'], 3))).toThrow(
      /adapts v_proj, which this phi3 model does not have/,
    );
  });
});

const PHI3_LIKE_LLAMA = {
  architectures: ['LlamaForCausalLM'],
  hidden_size: 64,
  intermediate_size: 96,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  vocab_size: 100,
};
