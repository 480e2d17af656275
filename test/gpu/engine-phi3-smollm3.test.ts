// Phi-3 and SmolLM3 through the whole engine, from their files: a config.json in the family's format
// (Phi-3: fused qkv_proj / gate_up_proj, partial_rotary_factor 0.75, LongRoPE whose original length
// 16 the prompt passes; SmolLM3: no_rope_layers with a NoPE layer), random weights in a
// model.safetensors, and the bundled tiny-chat tokenizer. The engine parses, plans and uploads
// them, and its prompt logprobs and greedy tokens are the reference model's on the same tensors.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/generate/engine';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { safetensorsBlob } from '../../src/engine/model/files/safetensors-writer';
import { FilesSource } from '../../src/engine/model/sources/files-source';
import { expectClose } from '../../src/engine/reference/check';
import { greedyDecode, ReferenceModel } from '../../src/engine/reference/model';
import { randomModelTensors } from '../../src/engine/reference/random-model';
import { collect, promptOf, request, testGpu } from './engine-helpers';

afterAll(async () => (await testGpu()).device.destroy());

const TINY = new URL('../../public/models/tiny-chat/', import.meta.url);
const text = (file: string) => readFileSync(new URL(file, TINY), 'utf8');
const SHAPE = {
  hidden_size: 64,
  intermediate_size: 96,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 4096,
  rms_norm_eps: 1e-5,
};

const CONFIGS: Record<string, Record<string, unknown>> = {
  phi3: {
    ...SHAPE,
    architectures: ['Phi3ForCausalLM'],
    model_type: 'phi3',
    num_hidden_layers: 2,
    max_position_embeddings: 256,
    original_max_position_embeddings: 16,
    partial_rotary_factor: 0.75,
    rope_theta: 10000.0,
    rope_scaling: { type: 'longrope', short_factor: [1, 1.1, 1.3, 1.6, 2, 2.5], long_factor: [1, 2, 4, 8, 16, 32] },
    sliding_window: 262144,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
  },
  smollm3: {
    ...SHAPE,
    architectures: ['SmolLM3ForCausalLM'],
    model_type: 'smollm3',
    num_hidden_layers: 4,
    max_position_embeddings: 256,
    no_rope_layers: [1, 1, 1, 0],
    rope_theta: 5000000.0,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
  },
};

/** log softmax of each row at the next token: the logprob of prompt[t] given prompt[..t]. */
function promptLogprobs(logits: Float32Array, prompt: number[], V: number): number[] {
  return prompt.slice(1).map((tok, t) => {
    const row = logits.subarray(t * V, (t + 1) * V);
    const max = row.reduce((m, x) => Math.max(m, x), -Infinity);
    const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    return row[tok] - lse;
  });
}

describe('Phi-3 and SmolLM3 from their files through the engine', () => {
  for (const [family, json] of Object.entries(CONFIGS)) {
    it(`${family}: prompt logprobs and greedy tokens are the reference model's`, async () => {
      const cfg = parseModelConfig(json);
      const tensors = randomModelTensors(cfg, 'bf16', 61);
      const files = [
        new File([JSON.stringify(json)], 'config.json'),
        new File([text('tokenizer.json')], 'tokenizer.json'),
        new File([text('tokenizer_config.json')], 'tokenizer_config.json'),
        new File([safetensorsBlob(tensors)], 'model.safetensors'),
      ];
      const engine = new Engine(await testGpu(), {
        source: async (id) => new FilesSource(files, id),
        kvCacheBytes: 8 << 20,
        maxSeqs: 4,
        prefillChunk: 64,
      });
      const id = `test/${family}`;
      const served = await engine.loadModel(id);
      expect(served.config).toEqual(cfg);
      const V = cfg.vocabSize;
      const prompt = promptOf(24, V, 3);
      const out = await collect(engine.generate(request(id, prompt, { promptLogprobs: 1, maxTokens: 4, ignoreEos: true })), 1);
      const ref = new ReferenceModel(cfg, tensors);
      const got = out.prefilled!.promptLogprobs!.slice(1).map((p) => p!.logprob);
      expectClose(got, promptLogprobs(ref.forward(prompt), prompt, V), { atol: 2e-3, rtol: 2e-3 }, `${family} prompt logprobs`);
      expect(out.tokens[0]).toEqual(greedyDecode(ref, prompt, 4));
    });
  }
});
