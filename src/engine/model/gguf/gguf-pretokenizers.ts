/**
 * The pre-tokenizers of GGUF's gpt2-style BPE vocabularies, by `tokenizer.ggml.pre` name: the
 * regular expressions llama.cpp splits text with before BPE, and the flags it sets with them.
 * A fixed table copied from llama.cpp (src/llama-vocab.cpp, `llm_tokenizer_bpe` regexes and the
 * `tokenizer_pre ==` chain in `llama_vocab::impl::load`), so no regex ever comes from a file.
 *
 * - Each regex splits every piece the previous one left, matches and the text between them both
 *   kept (llama.cpp's `unicode_regex_split`, the `tokenizers` Split step with `Isolated`).
 * - `ignoreMerges`: a piece that is a whole vocabulary token is that token (Llama 3).
 * - `cleanSpaces`: llama.cpp's `clean_spaces`, transformers' clean_up_tokenization_spaces.
 * - `addBos`: the default of `tokenizer.ggml.add_bos_token` for this pre-tokenizer.
 *
 * Not here: the SentencePiece-style (`llama`) vocabulary, which has no pre-tokenizer.
 */

export interface GgufPreTokenizer {
  regexes: readonly string[];
  ignoreMerges: boolean;
  cleanSpaces: boolean;
  addBos: boolean;
}

const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`;
const CONTRACTIONS = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`;
const LLAMA3 = String.raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN2 = String.raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

const pre = (regexes: string[], flags: Partial<Omit<GgufPreTokenizer, 'regexes'>> = {}): GgufPreTokenizer => ({
  regexes,
  ignoreMerges: flags.ignoreMerges ?? false,
  cleanSpaces: flags.cleanSpaces ?? true,
  addBos: flags.addBos ?? false,
});

const DEFAULT = pre([String.raw`[\p{P}\$\+<=>\^~\|]+`, GPT2, String.raw`\p{N}+`, '[0-9][0-9][0-9]']);
const LLAMA3_PRE = pre([LLAMA3], { ignoreMerges: true, addBos: true });
const GPT2_PRE = pre([GPT2]);
const STARCODER = pre([String.raw`\p{N}`, GPT2]);
const QWEN2_PRE = pre([QWEN2], { cleanSpaces: false });

const TABLE: ReadonlyMap<string, GgufPreTokenizer> = new Map([
  ['default', DEFAULT],
  ['llama3', LLAMA3_PRE],
  ['llama-v3', LLAMA3_PRE],
  ['llama-bpe', LLAMA3_PRE],
  ['falcon3', LLAMA3_PRE],
  ['pixtral', LLAMA3_PRE],
  ['dbrx', pre([LLAMA3])],
  ['smaug-bpe', pre([LLAMA3])],
  ['gpt-2', GPT2_PRE],
  ['phi-2', GPT2_PRE],
  ['mpt', GPT2_PRE],
  ['olmo', GPT2_PRE],
  ['exaone4', GPT2_PRE],
  ['falcon', pre([String.raw`[\p{P}\$\+<=>\^~\|` + '`]+', GPT2, '[0-9][0-9][0-9]'])],
  ['starcoder', STARCODER],
  ['refact', STARCODER],
  ['codeshell', STARCODER],
  ['smollm', pre([String.raw`\p{N}`, GPT2], { cleanSpaces: false })],
  ['command-r', pre([String.raw`\p{N}`, GPT2], { cleanSpaces: false })],
  ['qwen2', QWEN2_PRE],
  ['deepseek-r1-qwen', QWEN2_PRE],
  ['megrez', pre([QWEN2])],
  ['stablelm2', pre([QWEN2])],
]);

/** The names Hearth knows, for messages. */
export const GGUF_PRE_TOKENIZERS: readonly string[] = [...TABLE.keys()];

/** The pre-tokenizer named `name` (llama.cpp reads a missing name as "default"), or null. */
export function ggufPreTokenizer(name: string | undefined): GgufPreTokenizer | null {
  return TABLE.get(name ?? 'default') ?? null;
}
