/**
 * A GGUF runs in the Engine as its safetensors original does: the bundled tiny Qwen3 is written as
 * an F32 GGUF the way llama.cpp's converter writes it (GGUF tensor names, the config as `qwen3.*`
 * keys, its real byte-level BPE tokenizer and chat template as `tokenizer.*`; a llama's q/k rows
 * would be permuted), loaded through loadGgufModelFiles, and served next to the original: the same
 * prompt tokens, prompt logprobs and greedy tokens. (The smallest bundled model keeps this quick on
 * SwiftShader; llama's un-permuted rows are checked bit for bit in test/unit/model/gguf-repo.test.ts.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import { tensorToF32 } from '../../src/engine/tensor/tensor-data';
import { hfTensorName } from '../../src/engine/model/gguf/gguf-model';
import { loadGgufModelFiles } from '../../src/engine/model/gguf/gguf-repo';
import { ggufHyperparameters } from '../../src/engine/model/gguf/gguf-hparams';
import { writeGguf, type GgufTensorInput } from '../../src/engine/model/gguf/gguf-writer';
import { loadModelFiles, type LoadedModelFiles } from '../../src/engine/model/files/repo';
import { FilesSource } from '../../src/engine/model/sources/files-source';
import { permuteRows } from '../../src/engine/model/gguf/gguf-model';
import { gpt2MetadataFrom } from '../unit/model/gguf-vocab-fixtures';
import { bundled, collect, request, testEngine } from './engine-helpers';

const MODEL = 'hearth/tiny-qwen3';
const GGUF_MODEL = 'gguf/tiny-qwen3';
const dir = new URL('../../public/models/tiny-qwen3/', import.meta.url);
const json = (file: string) => JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
/** convert_hf_to_gguf.py takes chat_template.jinja over tokenizer_config.json's chat_template. */
function tokenizerConfig() {
  const jinja = new URL('chat_template.jinja', dir);
  return { ...json('tokenizer_config.json'), ...(existsSync(jinja) ? { chat_template: readFileSync(jinja, 'utf8') } : {}) };
}

/** GGUF names of one layer's tensors, found through the loader's own HF mapping (its inverse). */
const GGUF_SUFFIXES = [
  'attn_norm',
  'attn_q',
  'attn_k',
  'attn_v',
  'attn_q_norm',
  'attn_k_norm',
  'attn_output',
  'ffn_norm',
  'ffn_gate',
  'ffn_up',
  'ffn_down',
];
function ggufNames(layers: number): Map<string, string> {
  const names = ['token_embd.weight', 'output_norm.weight', 'output.weight'];
  for (let l = 0; l < layers; l++) for (const s of GGUF_SUFFIXES) names.push(`blk.${l}.${s}.weight`);
  // Qwen3's untied lm_head would be output.weight; tied models have none.
  return new Map(names.map((n) => [hfTensorName(n)!, n]));
}

/** The repository as llama.cpp's convert_hf_to_gguf.py writes it, every tensor F32. */
async function ggufOf(files: LoadedModelFiles): Promise<Uint8Array> {
  const c = files.config;
  const names = ggufNames(c.numLayers);
  const tensors: GgufTensorInput[] = [];
  for await (const t of files.tensors()) {
    let data = new Uint8Array(tensorToF32(t).buffer);
    if (c.arch === 'llama' && /\.self_attn\.[qk]_proj\.weight$/.test(t.name))
      data = permuteRows(data, t.name.includes('q_proj') ? c.numHeads : c.numKvHeads, c.headDim);
    tensors.push({ name: names.get(t.name)!, ne: [...t.shape].reverse(), type: 'F32', data });
  }
  const a = c.arch;
  return writeGguf({
    metadata: [
      ...ggufHyperparameters(c, a),
      // The bundled tokenizer splits digits one by one before GPT-2's regex: llama.cpp's "smollm".
      ...gpt2MetadataFrom(json('tokenizer.json'), tokenizerConfig(), 'smollm', false),
    ],
    tensors,
  });
}

let engine: Engine;
let original: LoadedModelFiles;
let gguf: LoadedModelFiles;

beforeAll(async () => {
  engine = await testEngine();
  original = await loadModelFiles(bundled(MODEL));
  const bytes = await ggufOf(original);
  gguf = await loadGgufModelFiles(new FilesSource([new File([bytes as BlobPart], 'tiny-qwen3-F32.gguf')]), ['tiny-qwen3-F32.gguf']);
  await engine.loadModel(MODEL);
  await engine.loadFiles(GGUF_MODEL, gguf);
}, 120_000);
afterAll(() => engine?.gpu.device.destroy());

describe('a GGUF model in the Engine', () => {
  it('has the original config and weights in F32', () => {
    expect(gguf.config).toEqual({
      ...original.config,
      rmsNormEps: Math.fround(original.config.rmsNormEps),
      bosTokenId: null,
      eosTokenIds: gguf.config.eosTokenIds,
      torchDtype: null,
    });
    expect(gguf.weights.map((w) => [w.name, w.shape])).toEqual(expect.arrayContaining(original.weights.map((w) => [w.name, w.shape])));
    expect(gguf.weights.every((w) => w.dtype === 'f32')).toBe(true);
  });

  it('tokenizes and renders chat as the original, and gives the same prompt logprobs and greedy tokens', async () => {
    const messages = [{ role: 'user', content: 'Write 3 words about the sea, please!' }];
    const text = original.chatTemplates.forRequest().render({ messages, addGenerationPrompt: true });
    expect(gguf.chatTemplates.forRequest().render({ messages, addGenerationPrompt: true })).toBe(text);
    const prompt = original.tokenizer.encode(text, { addSpecialTokens: false });
    expect(gguf.tokenizer.encode(text, { addSpecialTokens: false })).toEqual(prompt);

    const run = (model: string) =>
      collect(engine.generate(request(model, prompt, { maxTokens: 6, promptLogprobs: 2, ignoreEos: true })), 1);
    const [want, got] = [await run(MODEL), await run(GGUF_MODEL)];
    expect(got.tokens).toEqual(want.tokens);
    const wantLp = want.prefilled!.promptLogprobs!;
    const gotLp = got.prefilled!.promptLogprobs!;
    expect(gotLp.length).toBe(wantLp.length);
    gotLp.forEach((p, i) => {
      if (!p) return expect(wantLp[i]).toBeNull();
      expect([p.tokenId, p.rank]).toEqual([wantLp[i]!.tokenId, wantLp[i]!.rank]);
      expect(Math.abs(p.logprob - wantLp[i]!.logprob)).toBeLessThan(1e-4);
      expect(p.top.map((t) => t.id)).toEqual(wantLp[i]!.top.map((t) => t.id));
    });
    expect(gguf.tokenizer.decode(got.tokens[0])).toBe(original.tokenizer.decode(want.tokens[0]));
  });
});
