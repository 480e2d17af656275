/**
 * ModelTokenizer: a model's tokenizer.json + tokenizer_config.json behind the operations Hearth
 * needs, over @huggingface/tokenizers (which implements the `tokenizers` pipeline: added tokens,
 * normalizer, pre-tokenizer, BPE, post-processor, decoder).
 *
 * Semantics follow transformers' fast tokenizers as vLLM uses them:
 * - encode: added tokens are matched first and kept atomic; addSpecialTokens runs the
 *   post-processor (e.g. Llama 3's BOS); chat prompts use false, the template already has them.
 * - decode: skipSpecialTokens drops tokens flagged special (not the non-special added tokens such
 *   as Qwen's <tool_call> or <think>); spacesBetweenSpecialTokens joins the text runs and added
 *   tokens with " " (vLLM's slow-tokenizer rule; vLLM ignores the flag for fast tokenizers, so the
 *   chat service decides whether to honour it); clean_up_tokenization_spaces from the config.
 * - tokenText / tokenBytes: the logprob `token` and `bytes` fields (vLLM decodes each id alone;
 *   a partial UTF-8 byte shows as U+FFFD and its bytes are those of U+FFFD).
 * - badWordsIds: vLLM's tokenisation of `bad_words` with and without a leading space.
 * Not here: streaming decode (detokenizer.ts), chat templates (chat-template.ts), the load-time
 * checks of tokenizer.json (tokenizer-checks.ts).
 */
import { Tokenizer } from '@huggingface/tokenizers';
import type { SpecialTokenStrings } from './chat-template';
import { IncrementalDetokenizer, type DecodeOptions, type DetokenizerOptions } from './detokenizer';
import { checkCompiledPatterns, checkPatterns, checkVocabulary, TokenizerError } from './tokenizer-checks';

export interface AddedTokenInfo {
  id: number;
  content: string;
  special: boolean;
}

type Json = Record<string, unknown>;

/** Letters, digits, spaces, punctuation, accents, CJK and an emoji: what every prompt may hold. */
const PROBE_TEXT = "Hello, world! It's 2024:\n\t  3.14 \u00e9t\u00e9 \u4f60\u597d \ud83d\ude00";

/** A special token in tokenizer_config.json is a string or an AddedToken dict {content, ...}. */
function tokenString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as Json).content === 'string') return (value as Json).content as string;
  return null;
}

/**
 * A text that spells an added token the model has no embedding row for (fitToRows dropped it, issue 21),
 * e.g. Gemma 3's `<image_soft_token>` in a text-only model; the message names the tokens.
 */
export class UnembeddedTokenError extends Error {
  constructor(
    readonly tokens: readonly AddedTokenInfo[],
    rows: number,
  ) {
    const named = tokens.map((t) => `${JSON.stringify(t.content)} (id ${t.id})`).join(', ');
    super(
      `The text contains ${named}: an added token of this model's tokenizer past the model's ${rows} embedding rows (config.json vocab_size), which was dropped when the model loaded. Remove it from the text.`,
    );
    this.name = 'UnembeddedTokenError';
  }
}

export class ModelTokenizer {
  /** Number of token ids (highest id + 1, added tokens included; after fitToRows at most the model's rows);
   *  may be below config vocab_size. */
  get vocabSize(): number {
    return this.rows ?? this.idToTokenTable.length;
  }
  /** The model's embedding rows once fitToRows dropped added tokens past them, else null. */
  private rows: number | null = null;
  /** The dropped added tokens by id: encode refuses a text that yields one. */
  private unembedded: ReadonlyMap<number, AddedTokenInfo> = new Map();
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  readonly unkTokenId: number | null;
  /** The special token strings a chat template sees. */
  readonly specialTokens: SpecialTokenStrings;
  readonly addedTokens: readonly AddedTokenInfo[];
  /** Ids dropped by skipSpecialTokens. */
  readonly specialTokenIds: ReadonlySet<number>;
  /** The decoder is plain ByteLevel: tokens are byte strings, which the detokenizer streams exactly. */
  readonly byteLevel: boolean;
  private readonly addedIds: ReadonlySet<number>;
  private readonly cleanUpDefault: boolean;
  private readonly idToTokenTable: readonly (string | undefined)[];

  private constructor(
    private readonly inner: Tokenizer,
    tokenizerJson: Json,
    config: Json,
  ) {
    const vocab = inner.get_vocab(true);
    const table: (string | undefined)[] = [];
    for (const [token, id] of vocab) table[id] = token;
    const added = (tokenizerJson.added_tokens as Json[] | undefined) ?? [];
    this.addedTokens = added.map((t) => ({ id: t.id as number, content: t.content as string, special: t.special === true }));
    for (const t of this.addedTokens) table[t.id] = t.content;
    this.idToTokenTable = table;
    this.addedIds = new Set(this.addedTokens.map((t) => t.id));

    const idOf = (key: string): number | null => {
      const s = tokenString(config[key]);
      return s == null ? null : (inner.token_to_id(s) ?? null);
    };
    this.bosTokenId = idOf('bos_token');
    this.eosTokenId = idOf('eos_token');
    this.padTokenId = idOf('pad_token');
    this.unkTokenId = idOf('unk_token');
    this.specialTokens = {
      bos_token: tokenString(config.bos_token),
      eos_token: tokenString(config.eos_token),
      pad_token: tokenString(config.pad_token),
      unk_token: tokenString(config.unk_token),
    };
    // transformers marks the special-token-map entries and additional_special_tokens special too.
    const special = new Set(this.addedTokens.filter((t) => t.special).map((t) => t.id));
    for (const id of [this.bosTokenId, this.eosTokenId, this.padTokenId, this.unkTokenId]) if (id != null) special.add(id);
    for (const s of (config.additional_special_tokens as unknown[] | undefined) ?? []) {
      const id = inner.token_to_id(tokenString(s) ?? '');
      if (id != null) special.add(id);
    }
    this.specialTokenIds = special;
    this.cleanUpDefault = config.clean_up_tokenization_spaces === true;
    this.byteLevel = (tokenizerJson.decoder as Json | null)?.type === 'ByteLevel';
  }

  /** Builds the tokenizer from the parsed JSON files; tokenizer_config.json is optional. */
  static fromJson(tokenizerJson: unknown, tokenizerConfig: unknown = {}): ModelTokenizer {
    if (!tokenizerJson || typeof tokenizerJson !== 'object' || !('model' in tokenizerJson)) {
      throw new TokenizerError('tokenizer.json: not a tokenizers file (no "model")');
    }
    const config = (tokenizerConfig && typeof tokenizerConfig === 'object' ? tokenizerConfig : {}) as Json;
    const tj = tokenizerJson as Json;
    checkVocabulary(tj);
    if (config.additional_special_tokens != null && !Array.isArray(config.additional_special_tokens)) {
      throw new TokenizerError('tokenizer_config.json: "additional_special_tokens" must be a list');
    }
    const regexSteps = new Map<object, string>();
    for (const part of ['normalizer', 'pre_tokenizer', 'decoder', 'post_processor']) checkPatterns(tj[part], part, regexSteps);
    let inner: Tokenizer;
    try {
      inner = new Tokenizer(tokenizerJson, config);
    } catch (e) {
      throw new TokenizerError(`tokenizer.json: ${(e as Error).message}`);
    }
    // Before the probe below, the first run of any pattern.
    checkCompiledPatterns(inner, regexSteps);
    const tokenizer = new ModelTokenizer(inner, tokenizerJson, config);
    tokenizer.probe();
    return tokenizer;
  }

  /**
   * The library reads some fields only when it first encodes or decodes (a TemplateProcessing
   * post-processor's `single`, for one): a file with a bad one would load, then fail every prompt
   * with a TypeError. One round trip of a sample text at load refuses it here, naming the file.
   */
  private probe(): void {
    try {
      this.decode(this.encode(PROBE_TEXT, { addSpecialTokens: true }));
    } catch (e) {
      // A TypeError's text names the library's internals, not the field: say where to look instead.
      const why =
        e instanceof TypeError
          ? 'a field of its normalizer, pre-tokenizer, model, post-processor or decoder has the wrong type'
          : (e as Error).message;
      throw new TokenizerError(`tokenizer.json: the tokenizer fails on sample text: ${why}`);
    }
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    if (text.length === 0 && !options.addSpecialTokens) return [];
    const ids = this.inner.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
    if (this.unembedded.size > 0) {
      const found = [...new Set(ids.filter((id) => this.unembedded.has(id)))].map((id) => this.unembedded.get(id)!);
      if (found.length > 0) throw new UnembeddedTokenError(found, this.rows!);
    }
    return ids;
  }

  /**
   * Fits the tokenizer to a model with `rows` embedding rows (config.json vocab_size), as llama.cpp's
   * converter does: added tokens past them are dropped (Gemma 3's `<image_soft_token>` at 262144 in
   * its 262144-row text models, Llama 3.2 Vision's `<|image|>`) and returned, so the caller can warn;
   * a text that spells one is refused by encode, never read from a row that does not exist. A base
   * vocabulary (tokenizer.json's model.vocab) past the rows means another model's tokenizer: an error.
   */
  fitToRows(rows: number, tokenizerJson: unknown): AddedTokenInfo[] {
    const vocab = ((tokenizerJson as Json).model as Json).vocab;
    let base = Array.isArray(vocab) ? vocab.length : 0;
    if (!Array.isArray(vocab)) for (const id of Object.values(vocab as Record<string, number>)) base = Math.max(base, id + 1);
    if (base > rows) {
      throw new TokenizerError(
        `tokenizer.json's vocabulary has ${base} token ids but config.json's vocab_size is ${rows}: the tokenizer does not belong to this model`,
      );
    }
    const dropped = this.addedTokens.filter((t) => t.id >= rows);
    if (dropped.length === 0) return [];
    this.rows = rows;
    this.unembedded = new Map(dropped.map((t) => [t.id, t]));
    return dropped;
  }

  /** The vocabulary string of an id (e.g. "Ġthe"), or undefined outside the vocabulary. */
  idToToken(id: number): string | undefined {
    return this.idToTokenTable[id];
  }

  tokenToId(token: string): number | undefined {
    return this.inner.token_to_id(token);
  }

  isAddedToken(id: number): boolean {
    return this.addedIds.has(id);
  }

  /**
   * Ids outside the tokenizer's vocabulary (a model's vocab_size can exceed it: padding rows)
   * decode to nothing.
   */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const cleanUp = options.cleanUpTokenizationSpaces ?? this.cleanUpDefault;
    const kept = ids.filter((id) => this.idToTokenTable[id] !== undefined && !(options.skipSpecialTokens && this.specialTokenIds.has(id)));
    if (kept.length === 0) return '';
    if (!options.spacesBetweenSpecialTokens) {
      return this.inner.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: cleanUp });
    }
    return this.subTexts(kept).join(' ');
  }

  /** Text runs and added tokens, in order: what spacesBetweenSpecialTokens joins with spaces. */
  private subTexts(ids: readonly number[]): string[] {
    const out: string[] = [];
    let run: number[] = [];
    const flush = () => {
      if (run.length) out.push(this.inner.decode(run, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
      run = [];
    };
    for (const id of ids) {
      if (this.addedIds.has(id)) {
        flush();
        out.push(this.idToTokenTable[id]!);
      } else {
        run.push(id);
      }
    }
    flush();
    return out;
  }

  /** The logprob display string of one token: the id decoded alone (vLLM). */
  tokenText(id: number): string {
    return this.decode([id]);
  }

  /** UTF-8 bytes of tokenText (the logprob `bytes` field). */
  tokenBytes(id: number): number[] {
    return [...new TextEncoder().encode(this.tokenText(id))];
  }

  /** A streaming decoder; `promptIds` gives context to non-byte-level decoders (see detokenizer.ts). */
  detokenizer(options: DetokenizerOptions = {}): IncrementalDetokenizer {
    return new IncrementalDetokenizer(this, options);
  }

  /**
   * vLLM `SamplingParams.update_from_tokenizer`: each bad word is encoded as written (left-stripped)
   * and with one leading space; the spaced variant is kept only when it yields a different first
   * token and the same number of tokens (so " word" is banned mid-text too).
   */
  badWordsIds(words: readonly string[]): number[][] {
    const out: number[][] = [];
    for (const word of words) {
      const plain = this.encode(word.trimStart(), { addSpecialTokens: false });
      out.push(plain);
      const spaced = this.encode(' ' + word.trimStart(), { addSpecialTokens: false });
      if (spaced.length > 0 && spaced[0] !== plain[0] && spaced.length === plain.length) out.push(spaced);
    }
    return out;
  }
}
