// Gemma 3 configs as published (fixtures/: google/gemma-3-270m, google/gemma-3-1b-it; a
// Gemma3ForConditionalGeneration config in transformers 5's layout) parsed into the engine's
// ModelConfig, and what the engine refuses to run.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { checkpointTensorName, planParameters } from '../../../src/engine/model/weights/parameter-plan';
import { parseLoraTensorName } from '../../../src/engine/model/lora/peft-modules';
import { gemma3Fixture } from './gemma3-fixtures';

const pattern = (L: number) => Array.from({ length: L }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention'));

describe('Gemma 3 config.json', () => {
  it('gemma-3-270m: layer_types, two RoPE bases, the softmax and embedding scales, tied GeGLU', () => {
    const c = parseModelConfig(gemma3Fixture('gemma-3-270m'));
    expect(c).toMatchObject({
      arch: 'gemma3',
      hiddenSize: 640,
      numLayers: 18,
      numHeads: 4,
      numKvHeads: 1,
      headDim: 256,
      intermediateSize: 2048,
      vocabSize: 262144,
      rmsNormEps: 1e-6,
      ropeTheta: 1_000_000,
      ropeScaling: null,
      ropeLocalTheta: 10_000,
      slidingWindow: 512,
      maxPositionEmbeddings: 32768,
      tieWordEmbeddings: true,
      qkNorm: true,
      hiddenAct: 'gelu_tanh',
      normWeightOffset: 1,
      sandwichNorms: true,
      attentionScale: 1 / 16,
      bosTokenId: 2,
      eosTokenIds: [1],
      torchDtype: 'bf16',
      multimodalCheckpoint: false,
    });
    expect(c.embeddingScale).toBeCloseTo(Math.sqrt(640), 12);
    expect(c.layerTypes).toEqual(pattern(18));
    // Four norms per layer, q/k norms, no biases, no lm_head.
    const names = planParameters(c).map((p) => p.name);
    expect(names.filter((n) => n.startsWith('model.layers.3.'))).toEqual([
      'model.layers.3.input_layernorm.weight',
      'model.layers.3.self_attn.q_proj.weight',
      'model.layers.3.self_attn.k_proj.weight',
      'model.layers.3.self_attn.v_proj.weight',
      'model.layers.3.self_attn.q_norm.weight',
      'model.layers.3.self_attn.k_norm.weight',
      'model.layers.3.self_attn.o_proj.weight',
      'model.layers.3.post_attention_layernorm.weight',
      'model.layers.3.pre_feedforward_layernorm.weight',
      'model.layers.3.mlp.gate_proj.weight',
      'model.layers.3.mlp.up_proj.weight',
      'model.layers.3.mlp.down_proj.weight',
      'model.layers.3.post_feedforward_layernorm.weight',
    ]);
    expect(names).not.toContain('lm_head.weight');
  });

  it('gemma-3-1b-it: every 6th layer global from sliding_window_pattern, two end ids', () => {
    const c = parseModelConfig(gemma3Fixture('gemma-3-1b-it'));
    expect(c.layerTypes).toEqual(pattern(26));
    expect(c.layerTypes.filter((t) => t === 'full_attention').length).toBe(4);
    expect(c.eosTokenIds).toEqual([1, 106]);
    expect(c.hiddenSize).toBe(1152);
  });

  it('Gemma3ForConditionalGeneration: the text_config, rope_parameters per layer type, language_model.* tensors', () => {
    const c = parseModelConfig({
      architectures: ['Gemma3ForConditionalGeneration'],
      model_type: 'gemma3',
      eos_token_id: [1, 106],
      text_config: {
        ...gemma3Fixture('gemma-3-1b-it'),
        architectures: undefined,
        hidden_size: 2560,
        num_hidden_layers: 34,
        num_attention_heads: 8,
        num_key_value_heads: 4,
        query_pre_attn_scalar: 256,
        sliding_window: 1024,
        sliding_window_pattern: undefined,
        rope_scaling: undefined,
        rope_parameters: { full_attention: { factor: 8.0, rope_type: 'linear' }, sliding_attention: { rope_type: 'default' } },
      },
      vision_config: { model_type: 'siglip_vision_model' },
    });
    expect(c).toMatchObject({ arch: 'gemma3', hiddenSize: 2560, numKvHeads: 4, slidingWindow: 1024, multimodalCheckpoint: true });
    expect(c.ropeTheta).toBe(1_000_000);
    expect(c.ropeScaling).toEqual({ type: 'linear', factor: 8 });
    expect(c.ropeLocalTheta).toBe(10000);
    expect(c.layerTypes).toEqual(pattern(34));
    expect(c.eosTokenIds).toEqual([1, 106]);
    // transformers < 4.52 and later layouts of the text model; the vision tower is not the engine's.
    expect(checkpointTensorName(c, 'language_model.model.layers.0.mlp.up_proj.weight')).toBe('model.layers.0.mlp.up_proj.weight');
    expect(checkpointTensorName(c, 'model.language_model.embed_tokens.weight')).toBe('model.embed_tokens.weight');
    expect(checkpointTensorName(c, 'vision_tower.vision_model.embeddings.patch_embedding.weight')).toBeNull();
    expect(checkpointTensorName(c, 'model.multi_modal_projector.mm_soft_emb_norm.weight')).toBeNull();
    // PEFT adapters trained on such a checkpoint name the same layers.
    for (const prefix of ['base_model.model.model.language_model.', 'base_model.model.language_model.model.', 'base_model.model.model.']) {
      expect(parseLoraTensorName(`${prefix}layers.3.self_attn.q_proj.lora_A.weight`)).toEqual({ layer: 3, module: 'q_proj', which: 'A' });
    }
    expect(parseLoraTensorName('base_model.model.model.vision_tower.encoder.layers.3.self_attn.q_proj.lora_A.weight')).toBeNull();
  });

  it('refuses what the engine would run wrong, naming the field', () => {
    const base = gemma3Fixture('gemma-3-270m');
    const refuse = (patch: Record<string, unknown>, field: string) =>
      expect(() => parseModelConfig({ ...base, ...patch })).toThrow(new RegExp(`"${field}"`));
    refuse({ final_logit_softcapping: 30 }, 'final_logit_softcapping');
    refuse({ attn_logit_softcapping: 50 }, 'attn_logit_softcapping');
    refuse({ hidden_activation: 'relu' }, 'hidden_activation');
    refuse({ use_bidirectional_attention: true }, 'use_bidirectional_attention');
    refuse({ layer_types: ['full_attention'] }, 'layer_types');
    refuse({ rope_scaling: { rope_type: 'yarn', factor: 4 } }, 'rope_scaling');
    expect(() => parseModelConfig({ architectures: ['Gemma3ForConditionalGeneration'] })).toThrow(ConfigError);
  });
});
