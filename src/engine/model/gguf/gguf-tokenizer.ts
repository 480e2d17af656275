/**
 * A GGUF file's tokenizer (`tokenizer.ggml.*` metadata) as the `tokenizer.json` and
 * `tokenizer_config.json` objects ModelTokenizer and ChatTemplates already read, built to tokenize
 * as llama.cpp does for that file (src/llama-vocab.cpp):
 *
 * - `gpt2`: byte-level BPE with the file's merges; the pre-tokenizer regexes come from the fixed
 *   table in gguf-pretokenizers.ts by `tokenizer.ggml.pre`, never from the file.
 * - `llama`: SentencePiece-style. llama.cpp merges the adjacent pair whose joined text is the
 *   vocabulary token with the highest score, then falls back to `<0xXX>` byte tokens; that is a
 *   BPE whose merges are every split of a token into two tokens, ranked by the joined token's
 *   score (transformers' LlamaConverter builds Llama's tokenizer.json the same way). Spaces become
 *   ▁, and with `add_space_prefix` each text run between special tokens gets a leading ▁.
 * - Control, unknown and user-defined tokens are matched in the text before anything else
 *   (llama.cpp's special-token partition); control and unknown ones are special (dropped by
 *   skip_special_tokens), user-defined ones are not.
 * - BOS/EOS ids, `add_bos_token` / `add_eos_token` (a post-processor adds them), the chat
 *   template(s) from `tokenizer.chat_template[.name]`.
 *
 * Untrusted input: vocabulary, merges and string lengths are capped (GGUF_TOKENIZER_LIMITS), and so
 * is the work of deriving SentencePiece merges. Failures are GgufError naming the key.
 * Known differences from llama.cpp (rare in real files): (1) two SentencePiece merges
 * whose joined tokens have the same score are ordered by rank here, where llama.cpp takes the
 * leftmost pair; (2) overlapping special tokens are matched leftmost-longest here, longest-first over
 * the whole text there; (3) a gpt2 vocabulary without bos/eos keys has none here, where llama.cpp
 * assumes id 11.
 * Not here: running the tokenizer (tokenizer.ts), reading the file (gguf-reader.ts).
 */
import { GgufError, GgufValueType, type GgufFile } from './gguf-reader';
import { GGUF_PRE_TOKENIZERS, ggufPreTokenizer } from './gguf-pretokenizers';
import { llamaCppSpecials, TokenType } from './gguf-special-tokens';

/** Caps far above real vocabularies (Gemma 3: 262k tokens; Llama 3: 280k merges). */
export const GGUF_TOKENIZER_LIMITS = {
  tokens: 1 << 20,
  merges: 1 << 21,
  /** UTF-16 code units of one token or merge. */
  tokenChars: 1024,
  /** Merges derived from a SentencePiece vocabulary (one per way of splitting a token in two). */
  derivedMerges: 1 << 23,
  /** Characters looked at to derive them: the sum over tokens of length squared (Gemma 3: 1.1e7). */
  derivationWork: 1 << 28,
} as const;

type Json = Record<string, unknown>;

export interface GgufTokenizerFiles {
  tokenizer: Json;
  tokenizerConfig: Json;
  /** The ids that end generation in llama.cpp (EOS, EOT, EOM and the end tokens it knows by text). */
  eogTokenIds: number[];
}

class Meta {
  constructor(
    private readonly file: GgufFile,
    private readonly name: string,
  ) {}

  private entry(key: string) {
    return this.file.metadata.get(key);
  }
  fail(key: string, what: string): never {
    throw new GgufError(`${this.name}: metadata key ${key} ${what}`);
  }
  str(key: string): string | undefined {
    const e = this.entry(key);
    if (!e) return undefined;
    if (e.type !== GgufValueType.STRING) this.fail(key, 'is not a string');
    return e.value as string;
  }
  bool(key: string): boolean | undefined {
    const e = this.entry(key);
    if (!e) return undefined;
    if (e.type !== GgufValueType.BOOL) this.fail(key, 'is not a bool');
    return e.value as boolean;
  }
  /** A token id: an integer below the vocabulary size. */
  id(key: string, vocabSize: number): number | undefined {
    const v = this.entry(key)?.value;
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= vocabSize) {
      this.fail(key, `must be a token id below the vocabulary size ${vocabSize} (got ${String(v)})`);
    }
    return v;
  }
  strings(key: string, max: number): string[] | undefined {
    const e = this.entry(key);
    if (!e) return undefined;
    if (e.type !== GgufValueType.ARRAY || e.itemType !== GgufValueType.STRING) this.fail(key, 'is not an array of strings');
    const items = e.value as string[];
    if (items.length > max) this.fail(key, `has ${items.length} items (at most ${max})`);
    items.forEach((s, i) => {
      if (s.length > GGUF_TOKENIZER_LIMITS.tokenChars) {
        this.fail(`${key}[${i}]`, `is ${s.length} characters long (at most ${GGUF_TOKENIZER_LIMITS.tokenChars})`);
      }
    });
    return items;
  }
  /** A numeric array of at least `n` items (llama.cpp reads the first n of a longer one). */
  numbers(key: string, n: number, types: readonly GgufValueType[]): ArrayLike<number> | undefined {
    const e = this.entry(key);
    if (!e) return undefined;
    if (e.type !== GgufValueType.ARRAY || !types.includes(e.itemType!)) this.fail(key, 'has the wrong item type');
    const items = e.value as ArrayLike<number>;
    if (items.length < n) this.fail(key, `has ${items.length} items for ${n} tokens`);
    return items;
  }
}

/** The tokenizer.json and tokenizer_config.json objects of a GGUF file's vocabulary. */
export function ggufTokenizerFiles(file: GgufFile, name = 'model.gguf'): GgufTokenizerFiles {
  const m: Meta = new Meta(file, name);
  const v = readVocabulary(m);
  const { n, textOf } = v;
  const spm = v.kind === 'llama';
  const pre = spm ? null : ggufPreTokenizer(m.str('tokenizer.ggml.pre'));
  if (!spm && !pre) {
    m.fail(
      'tokenizer.ggml.pre',
      `names the pre-tokenizer "${m.str('tokenizer.ggml.pre')}", which Hearth does not know (known: ${GGUF_PRE_TOKENIZERS.join(', ')})`,
    );
  }
  // llama.cpp's defaults: SentencePiece vocabularies have <unk> <s> </s> at 0, 1, 2 and add BOS.
  const idOr = (key: string, fallback: number | null) => m.id(key, n) ?? (fallback != null && fallback < n ? fallback : null);
  const bos = idOr('tokenizer.ggml.bos_token_id', spm ? 1 : null);
  const eos = idOr('tokenizer.ggml.eos_token_id', spm ? 2 : null);
  const unk = idOr('tokenizer.ggml.unknown_token_id', spm ? 0 : null);
  const pad = idOr('tokenizer.ggml.padding_token_id', null);
  const fim = Object.fromEntries(
    ['pre', 'suf', 'mid', 'pad', 'rep', 'sep'].map((k) => [k, m.id(`tokenizer.ggml.fim_${k}_token_id`, n) ?? null]),
  );
  const eot = m.id('tokenizer.ggml.eot_token_id', n) ?? null;
  const eom = m.id('tokenizer.ggml.eom_token_id', n) ?? null;
  const { types, eog } = llamaCppSpecials(v.vocab, v.fileTypes, n, { eos, eot, eom, fim });
  const addBos = m.bool('tokenizer.ggml.add_bos_token') ?? (spm || pre!.addBos);
  const addEos = m.bool('tokenizer.ggml.add_eos_token') ?? false;
  if (addBos && bos == null) m.fail('tokenizer.ggml.add_bos_token', 'is true, but tokenizer.ggml.bos_token_id is not set');
  if (addEos && eos == null) m.fail('tokenizer.ggml.add_eos_token', 'is true, but tokenizer.ggml.eos_token_id is not set');

  const { model, tokenizer } = spm ? sentencePieceTokenizer(m, v, unk, name) : bpeTokenizer(m, v, pre!);
  const templates = chatTemplates(file, m);
  return {
    tokenizer: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens(types, n, textOf),
      ...tokenizer,
      post_processor: postProcessor(addBos ? bos : null, addEos ? eos : null, textOf),
      model,
    },
    eogTokenIds: eog,
    tokenizerConfig: {
      bos_token: bos != null ? textOf(bos) : null,
      eos_token: eos != null ? textOf(eos) : null,
      unk_token: unk != null ? textOf(unk) : null,
      pad_token: pad != null ? textOf(pad) : null,
      add_bos_token: addBos,
      add_eos_token: addEos,
      clean_up_tokenization_spaces: spm ? false : pre!.cleanSpaces,
      ...(templates != null ? { chat_template: templates } : {}),
    },
  };
}

interface Vocabulary {
  kind: 'gpt2' | 'llama';
  tokens: string[];
  n: number;
  fileTypes: ArrayLike<number> | undefined;
  /** Token text -> id (llama.cpp renames empty tokens `[EMPTY_<id>]`). */
  vocab: Map<string, number>;
  textOf: (id: number) => string;
}

/** tokenizer.ggml.model, .tokens and .token_type, checked as llama.cpp checks them. */
function readVocabulary(m: Meta): Vocabulary {
  const kind = m.str('tokenizer.ggml.model');
  if (kind === undefined) m.fail('tokenizer.ggml.model', 'is missing');
  if (kind !== 'gpt2' && kind !== 'llama') {
    m.fail('tokenizer.ggml.model', `is "${kind}": Hearth reads the "gpt2" (BPE) and "llama" (SentencePiece) vocabularies`);
  }
  const tokens = m.strings('tokenizer.ggml.tokens', GGUF_TOKENIZER_LIMITS.tokens);
  if (!tokens || tokens.length === 0) m.fail('tokenizer.ggml.tokens', 'is missing');
  const n = tokens.length;
  const fileTypes = m.numbers('tokenizer.ggml.token_type', n, [GgufValueType.INT32]);
  const vocab = new Map<string, number>();
  tokens.forEach((t, i) => {
    // llama.cpp asserts the vocabulary has no duplicates (and renames empty tokens).
    const text = t === '' ? `[EMPTY_${i}]` : t;
    if (vocab.has(text)) m.fail('tokenizer.ggml.tokens', `has the token ${JSON.stringify(text)} twice (ids ${vocab.get(text)} and ${i})`);
    vocab.set(text, i);
  });
  const textOf = (id: number) => (tokens[id] === '' ? `[EMPTY_${id}]` : tokens[id]);
  return { kind, tokens, n, fileTypes, vocab, textOf };
}

/** Control, unknown and user-defined tokens as tokenizer.json's added tokens. */
function addedTokens(types: readonly number[], n: number, textOf: (id: number) => string): Json[] {
  const added: Json[] = [];
  for (let id = 0; id < n; id++) {
    const type = types[id];
    if (type !== TokenType.CONTROL && type !== TokenType.UNKNOWN && type !== TokenType.USER_DEFINED) continue;
    added.push({
      id,
      content: textOf(id),
      single_word: false,
      lstrip: false,
      rstrip: false,
      // llama.cpp matches them in the raw text, before any ▁ escaping.
      normalized: false,
      special: type !== TokenType.USER_DEFINED,
    });
  }
  return added;
}

/** The llama (SentencePiece) vocabulary as a BPE model with byte fallback, merges derived from its scores. */
function sentencePieceTokenizer(m: Meta, v: Vocabulary, unk: number | null, name: string): { model: Json; tokenizer: Json } {
  const scores = m.numbers('tokenizer.ggml.scores', v.n, [GgufValueType.FLOAT32, GgufValueType.INT32]);
  const spacePrefix = m.bool('tokenizer.ggml.add_space_prefix') ?? true;
  const model = bpeModel(Object.fromEntries(v.vocab), sentencePieceMerges(v.tokens, v.vocab, scores, name), {
    unk_token: unk != null ? v.textOf(unk) : null,
    fuse_unk: true,
    byte_fallback: true,
  });
  const escape = { type: 'Replace', pattern: { String: ' ' }, content: '▁' };
  const tokenizer = {
    normalizer: { type: 'Sequence', normalizers: spacePrefix ? [{ type: 'Prepend', prepend: '▁' }, escape] : [escape] },
    pre_tokenizer: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(spacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    },
  };
  return { model, tokenizer };
}

/** The gpt2 (byte-level BPE) vocabulary with its merges and its named pre-tokenizer's regexes. */
function bpeTokenizer(m: Meta, v: Vocabulary, pre: NonNullable<ReturnType<typeof ggufPreTokenizer>>): { model: Json; tokenizer: Json } {
  const merges = m.strings('tokenizer.ggml.merges', GGUF_TOKENIZER_LIMITS.merges);
  if (!merges) m.fail('tokenizer.ggml.merges', 'is missing');
  const pairs = merges.map((s, i) => {
    // llama.cpp splits at the first space after the first character.
    const at = s.indexOf(' ', 1);
    if (at < 0) m.fail(`tokenizer.ggml.merges[${i}]`, 'is not two tokens separated by a space');
    return [s.slice(0, at), s.slice(at + 1)];
  });
  const model = bpeModel(Object.fromEntries(v.vocab), pairs, { ignore_merges: pre.ignoreMerges });
  const tokenizer = {
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        ...pre.regexes.map((r) => ({ type: 'Split', pattern: { Regex: r }, behavior: 'Isolated', invert: false })),
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  };
  return { model, tokenizer };
}

/** The `tokenizers` BPE model section; `options` sets unk_token, fuse_unk, byte_fallback, ignore_merges. */
function bpeModel(vocab: Record<string, number>, merges: string[][], options: Json): Json {
  const defaults = { unk_token: null, fuse_unk: false, byte_fallback: false, ignore_merges: false };
  return { type: 'BPE', dropout: null, continuing_subword_prefix: null, end_of_word_suffix: null, ...defaults, ...options, vocab, merges };
}

/** BOS / EOS around every encoded text, as llama.cpp's tokenize(add_special = true) adds them. */
function postProcessor(bos: number | null, eos: number | null, textOf: (id: number) => string): Json | null {
  if (bos == null && eos == null) return null;
  const ends = [bos, eos].filter((id): id is number => id != null);
  const item = (id: number) => ({ SpecialToken: { id: textOf(id), type_id: 0 } });
  const seq = (s: string) => ({ Sequence: { id: s, type_id: 0 } });
  const wrap = (inner: Json[]) => [...(bos != null ? [item(bos)] : []), ...inner, ...(eos != null ? [item(eos)] : [])];
  return {
    type: 'TemplateProcessing',
    single: wrap([seq('A')]),
    pair: wrap([seq('A'), seq('B')]),
    special_tokens: Object.fromEntries(ends.map((id) => [textOf(id), { id: textOf(id), ids: [id], tokens: [textOf(id)] }])),
  };
}

/**
 * Every split of a vocabulary token into two vocabulary tokens, highest score of the joined token
 * first (ties: lower id first): llama.cpp's SentencePiece merge order as BPE ranks.
 */
function sentencePieceMerges(
  tokens: readonly string[],
  vocab: ReadonlyMap<string, number>,
  scores: ArrayLike<number> | undefined,
  name: string,
): string[][] {
  // Each split hashes both halves: work grows with the square of a token's length, so it is bounded first.
  const work = tokens.reduce((w, t) => w + t.length * t.length, 0);
  if (work > GGUF_TOKENIZER_LIMITS.derivationWork) {
    throw new GgufError(`${name}: the tokens in tokenizer.ggml.tokens are too long to derive SentencePiece merges from`);
  }
  const found: Array<{ left: string; right: string; score: number; id: number }> = [];
  for (let id = 0; id < tokens.length; id++) {
    const chars = Array.from(tokens[id]);
    let left = '';
    for (let k = 1; k < chars.length; k++) {
      left += chars[k - 1];
      const right = tokens[id].slice(left.length);
      if (vocab.has(left) && vocab.has(right)) found.push({ left, right, score: scores ? scores[id] : 0, id });
    }
    if (found.length > GGUF_TOKENIZER_LIMITS.derivedMerges) {
      throw new GgufError(`${name}: the vocabulary in tokenizer.ggml.tokens yields over ${GGUF_TOKENIZER_LIMITS.derivedMerges} merges`);
    }
  }
  found.sort((a, b) => b.score - a.score || a.id - b.id);
  return found.map((f) => [f.left, f.right]);
}

/** `tokenizer.chat_template`, and named ones (`tokenizer.chat_template.tool_use`) as transformers' list. */
function chatTemplates(file: GgufFile, m: Meta): string | Array<{ name: string; template: string }> | null {
  const main = m.str('tokenizer.chat_template');
  const prefix = 'tokenizer.chat_template.';
  const named = [...file.metadata.keys()]
    .filter((k) => k.startsWith(prefix))
    .map((k) => ({ name: k.slice(prefix.length), template: m.str(k)! }));
  if (named.length === 0) return main ?? null;
  return [...(main != null ? [{ name: 'default', template: main }] : []), ...named];
}
