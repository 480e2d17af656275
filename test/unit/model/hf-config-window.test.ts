// Sliding-window fields of config.json: Mistral (Mistral-7B-v0.1 with its 4096-token window,
// Mistral-Nemo-Instruct-2407 with none and an explicit head_dim 128 != 5120 / 32), transformers'
// MistralConfig defaults for absent fields, Qwen2's use_sliding_window + max_window_layers, explicit
// layer_types, and the mistakes a repository can make.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { hybridWindow, layerWindow, localLayers, modelWindow } from '../../../src/engine/model/config/attention-window';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));

const sliding = (n: number) => new Array(n).fill('sliding_attention');
const full = (n: number) => new Array(n).fill('full_attention');

describe('sliding windows in config.json', () => {
  it('Mistral-7B-v0.1: the Llama family, every layer slides over 4096 tokens, the context stays 32768', () => {
    const c = parseModelConfig(fixture('mistral-7b-v0.1.config.json'));
    expect(c).toMatchObject({
      arch: 'llama',
      hiddenSize: 4096,
      numLayers: 32,
      numHeads: 32,
      numKvHeads: 8,
      headDim: 128,
      intermediateSize: 14336,
      vocabSize: 32000,
      rmsNormEps: 1e-5,
      ropeTheta: 10000,
      slidingWindow: 4096,
      layerTypes: sliding(32),
      maxPositionEmbeddings: 32768,
      tieWordEmbeddings: false,
      attentionBias: false,
      qkNorm: false,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    expect(modelWindow(c)).toBe(4096);
    expect(layerWindow(c, 31)).toBe(4096);
    expect([hybridWindow(c), localLayers(c)]).toEqual([0, []]); // one pool, windowed as a whole
  });

  it('Mistral-Nemo-Instruct-2407: sliding_window null is full attention; explicit head_dim 128', () => {
    const c = parseModelConfig(fixture('mistral-nemo-instruct-2407.config.json'));
    expect(c).toMatchObject({ arch: 'llama', headDim: 128, hiddenSize: 5120, numHeads: 32, slidingWindow: null, layerTypes: full(40) });
    expect(c.maxPositionEmbeddings).toBe(1024000);
    expect(modelWindow(c)).toBe(0);
  });

  it("MistralConfig's defaults for absent fields: window 4096, 131072 positions, eps 1e-6", () => {
    const minimal = {
      model_type: 'mistral',
      hidden_size: 64,
      intermediate_size: 128,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      vocab_size: 100,
    };
    expect(parseModelConfig(minimal)).toMatchObject({
      arch: 'llama',
      slidingWindow: 4096,
      layerTypes: sliding(2),
      maxPositionEmbeddings: 131072,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      tieWordEmbeddings: false,
    });
    // A window as long as the context masks nothing: no window, every layer attends fully.
    const long = parseModelConfig({ ...minimal, max_position_embeddings: 1000 });
    expect(long.slidingWindow).toBeNull();
    expect(new Set(long.layerTypes)).toEqual(new Set(['full_attention']));
  });

  it('Qwen2: use_sliding_window slides layers from max_window_layers on; without it the window field is ignored', () => {
    const qwen = fixture('qwen2.5-0.5b.config.json');
    expect(parseModelConfig(qwen)).toMatchObject({ slidingWindow: null, layerTypes: full(24) });
    const c = parseModelConfig({ ...qwen, use_sliding_window: true, sliding_window: 512, max_window_layers: 20 });
    expect(c.slidingWindow).toBe(512);
    expect(c.layerTypes).toEqual([...full(20), ...sliding(4)]);
    expect(modelWindow(c)).toBe(0); // hybrid: some layers attend fully
    // ...so layers 20..23 keep their K/V in the local pool (model/kv/kv-pools.ts).
    expect([hybridWindow(c), localLayers(c)]).toEqual([512, [20, 21, 22, 23]]);
    expect(layerWindow(c, 19)).toBe(0);
    expect(layerWindow(c, 20)).toBe(512);
    // max_window_layers defaults to 28 (Qwen2Config): past this model's 24 layers, nothing slides.
    const { max_window_layers: _, ...noMax } = { ...qwen, use_sliding_window: true, sliding_window: 512 };
    expect(parseModelConfig(noMax)).toMatchObject({ slidingWindow: null, layerTypes: full(24) });
  });

  it('explicit layer_types are taken as they are', () => {
    const base = fixture('mistral-7b-v0.1.config.json');
    const types = [...sliding(31), 'full_attention'];
    expect(parseModelConfig({ ...base, layer_types: types })).toMatchObject({ slidingWindow: 4096, layerTypes: types });
    // A listed sliding layer without a window attends fully, as in transformers.
    expect(parseModelConfig({ ...base, sliding_window: null, layer_types: types })).toMatchObject({
      slidingWindow: null,
      layerTypes: full(32),
    });
  });

  it('refuses malformed windows and layer_types, naming the field', () => {
    const base = fixture('mistral-7b-v0.1.config.json');
    const refuse = (json: unknown, msg: RegExp) => {
      expect(() => parseModelConfig(json)).toThrow(ConfigError);
      expect(() => parseModelConfig(json)).toThrow(msg);
    };
    refuse({ ...base, sliding_window: 0 }, /"sliding_window" must be a positive integer/);
    refuse({ ...base, sliding_window: 'big' }, /"sliding_window" must be a positive integer/);
    refuse({ ...base, layer_types: sliding(3) }, /"layer_types" must list 32 entries/);
    refuse({ ...base, layer_types: [...sliding(31), 'chunked_attention'] }, /"layer_types" must list 32 entries/);
    refuse({ ...fixture('qwen2.5-0.5b.config.json'), use_sliding_window: true, max_window_layers: -1 }, /"max_window_layers"/);
  });
});
