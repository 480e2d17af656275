// A GGUF's tokenizer must tokenize as llama.cpp does for that file: real vocabularies (Qwen3's and
// Llama 3.1's byte-level BPE, Llama 2's SentencePiece) are written as GGUF metadata the way
// llama.cpp's converter writes them (Gemma 3's SentencePiece too), Hearth builds its tokenizer from the file alone, and
// node-llama-cpp (llama.cpp's own build) loads the very same file vocabulary-only and tokenizes a
// varied corpus. Also: decoding, BOS, special ids, the chat template from metadata, and refusals.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatTemplates } from '../../../src/engine/model/text/chat-template';
import { readGguf } from '../../../src/engine/model/gguf/gguf-reader';
import { GGUF_PRE_TOKENIZERS } from '../../../src/engine/model/gguf/gguf-pretokenizers';
import { ggufTokenizerFiles } from '../../../src/engine/model/gguf/gguf-tokenizer';
import { gv } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import { gemma3Metadata, gpt2Metadata, hubFiles, llama2Metadata, smallGpt2Metadata, vocabGguf, type Metadata } from './gguf-vocab-fixtures';

const CORPUS = [
  'Hello, world!',
  ' leading space and trailing space ',
  'Multiple   spaces\there\n\nand\r\nnewlines\n\n\n   indented',
  "It's what they'd've WANTED, isn't it? I'LL see.",
  'Numbers: 1 12 123 1234 12345 3.14159 1,000,000 -42 0x1F',
  '中文分词测试：你好，世界！日本語のテキスト、カタカナ。한국어 문장입니다.',
  'Emoji 🙂👍🏽👨‍👩‍👧 and symbols ∑∫√ ©®™ → ← “quotes” «guillemets» — dash…',
  'Ünïcödé àccents: naïve café façade Ωμέγα Привет мир עברית العربية हिन्दी',
  'def f(x):\n    return {"a": [1, 2, 3], \'b\': x ** 2}  # comment\n\tif x != None: pass',
  '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n',
  '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>',
  '<s>[INST] Who are you? [/INST] I am</s><s>again',
  '<tool_call>\n{"name": "get_weather"}\n</tool_call><think>hmm</think>',
  '   \n \n\t\t  ',
  'a',
  'zero\u200bwidth\u00a0nbsp',
  '<start_of_turn>user\nHi  there,\n\n\n  <b>bold</b>\t\tok<end_of_turn>\n<start_of_turn>model\n',
];

/** A file's tokenizer as Hearth builds it, from the GGUF bytes alone. */
async function hearthTokenizer(bytes: Uint8Array) {
  const file = await readGguf(memoryBytes(bytes), 'vocab.gguf');
  const files = ggufTokenizerFiles(file, 'vocab.gguf');
  return { files, tokenizer: ModelTokenizer.fromJson(files.tokenizer, files.tokenizerConfig) };
}

const VOCABULARIES = {
  qwen3: () => gpt2Metadata('tokenizer-qwen3', 'qwen2', false),
  'llama3.1': () => gpt2Metadata('tokenizer-llama3_1', 'llama-bpe', true),
  'llama2 (SentencePiece)': () => llama2Metadata(),
  'gemma3 (SentencePiece)': () => gemma3Metadata(),
};
type Vocabulary = keyof typeof VOCABULARIES;
/** Each real vocabulary's GGUF and Hearth tokenizer, built once for the whole file. */
const built = new Map<Vocabulary, Promise<{ bytes: Uint8Array } & Awaited<ReturnType<typeof hearthTokenizer>>>>();
function vocabulary(name: Vocabulary) {
  if (!built.has(name)) {
    const bytes = vocabGguf(VOCABULARIES[name]());
    built.set(
      name,
      hearthTokenizer(bytes).then((t) => ({ bytes, ...t })),
    );
  }
  return built.get(name)!;
}

describe('GGUF tokenizers against llama.cpp', () => {
  let llama: Llama;
  let dir: string;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
    dir = mkdtempSync(join(tmpdir(), 'hearth-gguf-vocab-'));
  });
  afterAll(async () => {
    await llama?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(Object.keys(VOCABULARIES) as Vocabulary[])(
    '%s: the same token ids as llama.cpp for every text, and the same decoded text',
    async (name) => {
      const { bytes, tokenizer } = await vocabulary(name);
      const path = join(dir, `${name.replace(/\W/g, '')}.gguf`);
      writeFileSync(path, bytes);
      const model: LlamaModel = await llama.loadModel({ modelPath: path, vocabOnly: true, gpuLayers: 0 });
      try {
        for (const text of CORPUS) {
          const ours = tokenizer.encode(text, { addSpecialTokens: false });
          const theirs = model.tokenize(text, true).map(Number);
          expect(ours, `${name}: ${JSON.stringify(text)}`).toEqual(theirs);
          expect(tokenizer.decode(ours), `${name}: decode ${JSON.stringify(text)}`).toBe(model.detokenize(theirs as Token[], true));
        }
      } finally {
        await model.dispose();
      }
    },
    60_000,
  );

  it.each([
    ['llama2 (SentencePiece)', 'tokenizer-llama2'],
    ['gemma3 (SentencePiece)', 'tokenizer-gemma3'],
  ] as const)(
    '%s tokenizes as the original tokenizer.json does, and decodes plain text back',
    async (name, pkg) => {
      const { tokenizer } = await vocabulary(name);
      const { tokenizer: tj, config } = hubFiles(pkg);
      const original = ModelTokenizer.fromJson(tj, config);
      for (const text of CORPUS) {
        expect(tokenizer.encode(text), JSON.stringify(text)).toEqual(original.encode(text));
        if (!text.includes('<')) expect(tokenizer.decode(tokenizer.encode(text, { addSpecialTokens: false }))).toBe(text);
      }
    },
    60_000,
  );
});

const replace = (metadata: Metadata, key: string, value: Metadata[number][1] | null): Metadata =>
  value == null ? metadata.filter(([k]) => k !== key) : metadata.map(([k, v]) => [k, k === key ? value : v]);

describe('GGUF tokenizer metadata', () => {
  it('special ids, BOS from add_bos_token, and the chat template come from the file', async () => {
    const { tokenizer } = await vocabulary('llama3.1');
    expect(tokenizer.bosTokenId).toBe(128000);
    expect(tokenizer.eosTokenId).toBe(128009);
    expect(tokenizer.encode('Hi', { addSpecialTokens: true })).toEqual([128000, ...tokenizer.encode('Hi', { addSpecialTokens: false })]);
    expect(tokenizer.decode(tokenizer.encode('<|eot_id|>x'), { skipSpecialTokens: true })).toBe('x');

    const qwen = await vocabulary('qwen3');
    expect(qwen.tokenizer.encode('Hi', { addSpecialTokens: true })).toEqual(qwen.tokenizer.encode('Hi', { addSpecialTokens: false }));
    // <tool_call> is USER_DEFINED in the file: one atomic token that decoding keeps.
    const call = qwen.tokenizer.encode('<tool_call>', { addSpecialTokens: false });
    expect(call).toHaveLength(1);
    expect(qwen.tokenizer.decode(call, { skipSpecialTokens: true })).toBe('<tool_call>');
    // llama.cpp's end-of-generation set: the file's EOS and the end tokens it knows by their text.
    expect(qwen.files.eogTokenIds).toEqual(expect.arrayContaining([151643, 151645]));
    const templates = new ChatTemplates(null, qwen.files.tokenizerConfig.chat_template, qwen.tokenizer.specialTokens);
    const prompt = templates.forRequest().render({ messages: [{ role: 'user', content: 'Hello' }], addGenerationPrompt: true });
    expect(prompt).toContain('<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n');

    const spm = await vocabulary('llama2 (SentencePiece)');
    expect(spm.tokenizer.encode('Hi', { addSpecialTokens: true })[0]).toBe(1);
    const rendered = new ChatTemplates(null, spm.files.tokenizerConfig.chat_template, spm.tokenizer.specialTokens)
      .forRequest()
      .render({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(rendered).toBe('[user] Hi</s>');

    // Gemma 3: BOS added, <eos> and <end_of_turn> end generation, its own template from the file.
    const gemma = await vocabulary('gemma3 (SentencePiece)');
    expect(gemma.tokenizer.encode('Hi', { addSpecialTokens: true })[0]).toBe(2);
    expect(gemma.files.eogTokenIds).toEqual(expect.arrayContaining([1, 106]));
    const turn = new ChatTemplates(null, gemma.files.tokenizerConfig.chat_template, gemma.tokenizer.specialTokens)
      .forRequest()
      .render({ messages: [{ role: 'user', content: 'Hello' }], addGenerationPrompt: true });
    expect(turn).toBe('<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n');
  }, 60_000);

  it.each(GGUF_PRE_TOKENIZERS)('the pre-tokenizer "%s" passes the regex budget and round-trips text', async (pre) => {
    const metadata = replace(smallGpt2Metadata(), 'tokenizer.ggml.pre', gv.str(pre));
    const { tokenizer } = await hearthTokenizer(vocabGguf([...metadata, ['tokenizer.ggml.bos_token_id', gv.u32(263)]]));
    const text = "It's 2024: about the  inn, 100 at er!";
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(tokenizer.decode(ids)).toBe(text);
    // "ab" is one token unless a pre-tokenizer split it (none does).
    expect(tokenizer.encode('ab', { addSpecialTokens: false })).toEqual([256]);
  });

  it.each([
    ['an unknown pre-tokenizer', 'tokenizer.ggml.pre', gv.str('made-up'), /tokenizer\.ggml\.pre.*"made-up".*known: default/],
    ['an unknown vocabulary kind', 'tokenizer.ggml.model', gv.str('t5'), /tokenizer\.ggml\.model is "t5"/],
    ['no merges', 'tokenizer.ggml.merges', null, /tokenizer\.ggml\.merges is missing/],
    ['a malformed merge', 'tokenizer.ggml.merges', gv.strs(['Ġt', 'h e']), /tokenizer\.ggml\.merges\[0\] is not two tokens/],
    ['an EOS id past the vocabulary', 'tokenizer.ggml.eos_token_id', gv.u32(1 << 30), /eos_token_id must be a token id below/],
    ['duplicate tokens', 'tokenizer.ggml.tokens', gv.strs(['a', 'b', 'a']), /has the token "a" twice/],
    ['an over-long token', 'tokenizer.ggml.tokens', gv.strs(['x'.repeat(5000)]), /tokens\[0\] is 5000 characters long/],
    [
      'a token_type array shorter than the vocabulary',
      'tokenizer.ggml.token_type',
      gv.i32s([1, 2, 3]),
      /token_type has 3 items for 264 tokens/,
    ],
  ] as const)('refuses %s, naming the key', async (_what, key, value, message) => {
    await expect(hearthTokenizer(vocabGguf(replace(smallGpt2Metadata(), key, value)))).rejects.toThrow(message);
  });

  it('refuses a SentencePiece vocabulary whose merges would take too long to derive', async () => {
    const tokens = Array.from({ length: 300 }, (_, i) => String(i).padStart(1000, 'x'));
    const metadata: Metadata = [
      ['tokenizer.ggml.model', gv.str('llama')],
      ['tokenizer.ggml.tokens', gv.strs(tokens)],
      ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
      ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ];
    await expect(hearthTokenizer(vocabGguf(metadata))).rejects.toThrow('too long to derive SentencePiece merges');
  });
});
