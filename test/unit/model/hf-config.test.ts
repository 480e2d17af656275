// config.json and generation_config.json parsing against the real files of public models
// (fixtures/: SmolLM2-135M, Qwen2.5-0.5B, Qwen3-0.6B, Llama-3.2-1B-Instruct as published on the
// Hub) and against the variants and mistakes a user's repository can have.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { parseGenerationConfig, unionTokenIds } from '../../../src/engine/model/config/generation-config';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));

describe('parseModelConfig on published models', () => {
  it('SmolLM2-135M: Llama, GQA 9/3, derived head_dim, tied', () => {
    const c = parseModelConfig(fixture('smollm2-135m.config.json'));
    expect(c).toMatchObject({
      arch: 'llama',
      hiddenSize: 576,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      intermediateSize: 1536,
      vocabSize: 49152,
      rmsNormEps: 1e-5,
      ropeTheta: 100000,
      ropeScaling: null,
      maxPositionEmbeddings: 8192,
      tieWordEmbeddings: true,
      attentionBias: false,
      outputBias: false,
      mlpBias: false,
      qkNorm: false,
      bosTokenId: 0,
      eosTokenIds: [0],
      torchDtype: 'bf16',
    });
  });

  it('Qwen2.5-0.5B: q/k/v bias but no o_proj bias, rope 1e6', () => {
    const c = parseModelConfig(fixture('qwen2.5-0.5b.config.json'));
    expect(c).toMatchObject({
      arch: 'qwen2',
      hiddenSize: 896,
      numLayers: 24,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      intermediateSize: 4864,
      vocabSize: 151936,
      rmsNormEps: 1e-6,
      ropeTheta: 1e6,
      tieWordEmbeddings: true,
      attentionBias: true,
      outputBias: false,
      qkNorm: false,
      eosTokenIds: [151643],
    });
  });

  it('Qwen3-0.6B: explicit head_dim 128 (not 1024/16), q/k norm', () => {
    const c = parseModelConfig(fixture('qwen3-0.6b.config.json'));
    expect(c).toMatchObject({
      arch: 'qwen3',
      hiddenSize: 1024,
      numHeads: 16,
      numKvHeads: 8,
      headDim: 128,
      qkNorm: true,
      attentionBias: false,
      outputBias: false,
      maxPositionEmbeddings: 40960,
      eosTokenIds: [151645],
    });
  });

  it('Llama-3.2-1B-Instruct: llama3 rope scaling, eos list', () => {
    const c = parseModelConfig(fixture('llama-3.2-1b-instruct.config.json'));
    expect(c.ropeTheta).toBe(500000);
    expect(c.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    expect(c.eosTokenIds).toEqual([128001, 128008, 128009]);
    expect(c.bosTokenId).toBe(128000);
    expect(c.headDim).toBe(64);
  });
});

describe('parseModelConfig variants', () => {
  const llama = () => fixture('llama-3.2-1b-instruct.config.json');

  it('reads transformers 5 rope_parameters (theta inside) and the dtype key', () => {
    const j = llama();
    const scaling = j.rope_scaling;
    delete j.rope_scaling;
    delete j.rope_theta;
    delete j.torch_dtype;
    j.rope_parameters = { ...scaling, rope_theta: 500000 };
    j.dtype = 'float16';
    const c = parseModelConfig(j);
    expect(c.ropeTheta).toBe(500000);
    expect(c.ropeScaling?.type).toBe('llama3');
    expect(c.torchDtype).toBe('f16');
  });

  it('rope_parameters with rope_type "default" means no scaling', () => {
    const j = fixture('qwen3-0.6b.config.json');
    delete j.rope_theta;
    j.rope_parameters = { rope_type: 'default', rope_theta: 1000000 };
    const c = parseModelConfig(j);
    expect(c.ropeScaling).toBeNull();
    expect(c.ropeTheta).toBe(1e6);
  });

  it('linear rope scaling, with the old "type" key', () => {
    const j = fixture('smollm2-135m.config.json');
    j.rope_scaling = { type: 'linear', factor: 4.0 };
    expect(parseModelConfig(j).ropeScaling).toEqual({ type: 'linear', factor: 4 });
  });

  it('applies the family defaults transformers uses for absent fields', () => {
    const minimal = {
      architectures: ['LlamaForCausalLM'],
      hidden_size: 64,
      num_attention_heads: 4,
      num_hidden_layers: 2,
      intermediate_size: 128,
      vocab_size: 100,
    };
    const c = parseModelConfig(minimal);
    expect(c).toMatchObject({
      numKvHeads: 4,
      headDim: 16,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      maxPositionEmbeddings: 2048,
      tieWordEmbeddings: false,
      attentionBias: false,
      bosTokenId: null,
      eosTokenIds: [],
      torchDtype: null,
    });
    const q = parseModelConfig({ ...minimal, architectures: ['Qwen2ForCausalLM'] });
    expect(q.maxPositionEmbeddings).toBe(32768);
    expect(q.tieWordEmbeddings).toBe(false);
    expect(q.attentionBias).toBe(true);
  });

  it('Llama attention_bias and mlp_bias', () => {
    const j = { ...fixture('smollm2-135m.config.json'), attention_bias: true, mlp_bias: true };
    expect(parseModelConfig(j)).toMatchObject({ attentionBias: true, outputBias: true, mlpBias: true });
  });

  it('falls back to model_type when architectures is absent', () => {
    const j = fixture('qwen3-0.6b.config.json');
    delete j.architectures;
    expect(parseModelConfig(j).arch).toBe('qwen3');
  });
});

describe('parseModelConfig refuses what it cannot run, naming the problem', () => {
  const base = () => fixture('smollm2-135m.config.json');
  const refuse = (json: unknown, message: RegExp) => {
    expect(() => parseModelConfig(json)).toThrow(ConfigError);
    expect(() => parseModelConfig(json)).toThrow(message);
  };

  it('an unknown architecture names it and lists the supported ones', () => {
    refuse(
      { ...base(), architectures: ['FalconForCausalLM'] },
      /unsupported architecture "FalconForCausalLM".*LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM/,
    );
    refuse({ ...base(), architectures: undefined, model_type: 'gemma' }, /unsupported model_type "gemma"/);
  });

  it('a missing or malformed field names the field', () => {
    const j = base();
    delete j.hidden_size;
    refuse(j, /missing required field "hidden_size"/);
    refuse({ ...base(), num_hidden_layers: 0 }, /"num_hidden_layers" must be a positive integer \(got 0\)/);
    refuse({ ...base(), vocab_size: '49152' }, /"vocab_size" must be a positive integer/);
    refuse({ ...base(), rms_norm_eps: -1 }, /"rms_norm_eps" must be a positive number/);
    refuse({ ...base(), tie_word_embeddings: 'yes' }, /"tie_word_embeddings" must be true or false/);
    refuse({ ...base(), eos_token_id: [2, 'x'] }, /"eos_token_id" must be a token id or a list/);
    refuse('not an object', /expected a JSON object/);
  });

  it('inconsistent head counts', () => {
    refuse({ ...base(), num_key_value_heads: 4 }, /multiple of "num_key_value_heads"/);
    refuse({ ...base(), hidden_size: 577 }, /not divisible by "num_attention_heads"/);
  });

  it('features the engine does not implement', () => {
    refuse({ ...base(), rope_scaling: { rope_type: 'yarn', factor: 4 } }, /"rope_scaling" type "yarn" is not supported/);
    refuse({ ...base(), rope_scaling: { rope_type: 'llama3', factor: 8 } }, /"rope_scaling": missing required field "low_freq_factor"/);
    refuse({ ...base(), hidden_act: 'gelu' }, /"hidden_act" "gelu" is not supported/);
    refuse({ ...base(), quantization_config: { quant_method: 'awq' } }, /quantized/);
  });
});

describe('parseGenerationConfig', () => {
  it('Qwen3: eos list, pad, sampling defaults', () => {
    expect(parseGenerationConfig(fixture('qwen3-0.6b.generation_config.json'))).toEqual({
      eosTokenIds: [151645, 151643],
      bosTokenId: 151643,
      padTokenId: 151643,
      temperature: 0.6,
      topK: 20,
      topP: 0.95,
    });
  });

  it('Qwen2.5-Instruct: repetition penalty', () => {
    const g = parseGenerationConfig(fixture('qwen2.5-0.5b-instruct.generation_config.json'));
    expect(g).toMatchObject({ repetitionPenalty: 1.1, temperature: 0.7, topP: 0.8, topK: 20 });
    expect(g.minP).toBeUndefined();
    expect(g.maxNewTokens).toBeUndefined();
  });

  it('min_p and max_new_tokens; an int eos', () => {
    expect(parseGenerationConfig({ eos_token_id: 7, min_p: 0.05, max_new_tokens: 256 })).toEqual({
      eosTokenIds: [7],
      bosTokenId: null,
      padTokenId: null,
      minP: 0.05,
      maxNewTokens: 256,
    });
  });

  it('rejects out-of-range values naming the field', () => {
    expect(() => parseGenerationConfig({ top_p: 1.5 })).toThrow(/"top_p" must be in \[0, 1\]/);
    expect(() => parseGenerationConfig({ temperature: -1 })).toThrow(/"temperature"/);
    expect(() => parseGenerationConfig({ max_new_tokens: 0 })).toThrow(/"max_new_tokens"/);
  });

  it('the stop ids of a model are the union of every file', () => {
    const config = parseModelConfig(fixture('llama-3.2-1b-instruct.config.json'));
    const gen = parseGenerationConfig({ eos_token_id: [128009, 128001, 5] });
    expect(unionTokenIds(config.eosTokenIds, gen.eosTokenIds, [128009])).toEqual([128001, 128008, 128009, 5]);
  });
});
