/**
 * The token types llama.cpp actually uses for a GGUF vocabulary, and its end-of-generation set.
 * Besides `tokenizer.ggml.token_type`, llama.cpp recognises special tokens by their text
 * (src/llama-vocab.cpp, `llama_vocab::impl::load`, "auto-detect special tokens by text"): the
 * end-of-turn, fill-in-the-middle and end-of-generation tokens of known families become control
 * tokens, so they are matched whole in text (Qwen's vocabulary has a plain `</s>` token that
 * llama.cpp treats so), and every end-of-generation token stops generation.
 *
 * Not here: building the tokenizer (gguf-tokenizer.ts). The lists are copied from llama.cpp as
 * node-llama-cpp 3.22 bundles it; they are text, never patterns.
 */

/** llama.cpp's `llama_token_type`. */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

const EOT = [
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '<|end_of_text|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '<｜end▁of▁sentence｜>',
  '<end_of_utterance>',
];
const EOM = ['<|eom_id|>'];
/** Fill-in-the-middle tokens, each family only when its `tokenizer.ggml.fim_*_token_id` is absent. */
const FIM: ReadonlyArray<[string, readonly string[]]> = [
  ['pre', ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>']],
  ['suf', ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>']],
  ['mid', ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>']],
  ['pad', ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]']],
  ['rep', ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>']],
  ['sep', ['<|file_sep|>']],
];
const EOG = [
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>', '<end_of_turn>', '<|endoftext|>',
  '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]', '<|end_of_text|>', '<end_of_utterance>', '<eos>', '<turn|>',
  '<|tool_response>', '<｜end▁of▁sentence｜>', '[e~[',
]; // prettier-ignore
/** gpt-oss: always rendered, never control. */
const ALWAYS_USER_DEFINED = ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>'];

export interface LlamaCppSpecials {
  /** Token types after llama.cpp's promotions. */
  types: number[];
  /** Ids that end generation (llama.cpp's `special_eog_ids`). */
  eog: number[];
}

/**
 * `vocab`: token text -> id; `types`: the file's types; `ids`: the special ids the file sets
 * (eos, eot, eom and the fim_* keys by their short names) and whether each fim key is present.
 */
export function llamaCppSpecials(
  vocab: ReadonlyMap<string, number>,
  fileTypes: ArrayLike<number> | undefined,
  n: number,
  ids: { eos: number | null; eot: number | null; eom: number | null; fim: Readonly<Record<string, number | null>> },
): LlamaCppSpecials {
  const types = Array.from({ length: n }, (_, i) => (fileTypes ? fileTypes[i] : TokenType.NORMAL));
  const promote = (id: number) => {
    if (types[id] !== TokenType.CONTROL) types[id] = TokenType.CONTROL;
  };
  const find = (texts: readonly string[]) => texts.map((t) => vocab.get(t)).filter((id): id is number => id !== undefined);
  let eot = ids.eot;
  let eom = ids.eom;
  if (eot == null) [eot = null] = find(EOT);
  if (eom == null) [eom = null] = find(EOM);
  for (const id of [eot, eom]) if (id != null) promote(id);
  const fim: Record<string, number | null> = { ...ids.fim };
  for (const [kind, texts] of FIM) {
    if (fim[kind] != null) continue;
    [fim[kind] = null] = find(texts);
    if (fim[kind] != null) promote(fim[kind]);
  }
  const eog = new Set<number>();
  for (const kind of ['pad', 'rep', 'sep']) if (fim[kind] != null) eog.add(fim[kind]);
  for (const id of find(EOG)) {
    eog.add(id);
    promote(id);
  }
  for (const id of find(ALWAYS_USER_DEFINED)) types[id] = TokenType.USER_DEFINED;
  for (const id of [ids.eos, eot, eom]) if (id != null) eog.add(id);
  // llama.cpp's workarounds: harmony's <|end|> and gemma 4's </s> do not end generation there.
  const text = new Map([...vocab].map(([t, id]) => [id, t]));
  const inEog = (t: string) => [...eog].some((id) => text.get(id) === t);
  const drop = (t: string, type: number) => {
    const id = vocab.get(t)!;
    eog.delete(id);
    types[id] = type;
  };
  const call = inEog('<|call|>') || inEog('<|calls|>');
  if (inEog('<|end|>') && call && (inEog('<|return|>') || inEog('<|flush|>'))) drop('<|end|>', TokenType.USER_DEFINED);
  if (inEog('<|tool_response>') && inEog('</s>')) drop('</s>', TokenType.NORMAL);
  return { types, eog: [...eog].sort((a, b) => a - b) };
}
