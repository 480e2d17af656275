/**
 * IncrementalDetokenizer: turns generated token ids into text as they arrive, for streaming.
 * It never emits part of a UTF-8 character, and once finished its text equals
 * `tokenizer.decode(allIds, sameOptions)` with clean-up of tokenization spaces off (vLLM's streamed
 * and final texts are never cleaned up either).
 *
 * Two paths:
 * - byte-level tokenizers (Llama 3, Qwen, SmolLM2, Hearth's own): every regular token is a string
 *   of bytes; they go through one streaming TextDecoder, which holds back an incomplete character
 *   and replaces invalid bytes exactly as the whole-text decode does. Added tokens are emitted
 *   verbatim. O(1) per token.
 * - any other decoder (Metaspace/SentencePiece-style): vLLM's prefix/read offsets. Decode a short
 *   window before and after the new token and emit the difference, unless it ends in U+FFFD (an
 *   unfinished byte sequence); the window starts a few prompt tokens back so the first generated
 *   token's leading space survives decoders that strip it at the start of a text.
 * Not here: stop strings and their hold-back (the generation side owns those).
 */
import { CHAR_TO_BYTE } from './byte-level';

export interface DecodeOptions {
  skipSpecialTokens?: boolean;
  spacesBetweenSpecialTokens?: boolean;
  /** Default: tokenizer_config.json's clean_up_tokenization_spaces (false when absent). */
  cleanUpTokenizationSpaces?: boolean;
}

/** What the detokenizer reads of a tokenizer (ModelTokenizer in tokenizer.ts, which builds detokenizers). */
export interface TokenSource {
  /** The decoder is plain ByteLevel: every regular token is a string of bytes. */
  readonly byteLevel: boolean;
  readonly specialTokenIds: ReadonlySet<number>;
  idToToken(id: number): string | undefined;
  isAddedToken(id: number): boolean;
  decode(ids: readonly number[], options?: DecodeOptions): string;
}

export interface DetokenizerOptions {
  skipSpecialTokens?: boolean;
  spacesBetweenSpecialTokens?: boolean;
  /** The prompt's ids: context for the generic path (ignored on the byte-level path). */
  promptIds?: readonly number[];
}

/** vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET. */
const PROMPT_CONTEXT = 5;

export class IncrementalDetokenizer {
  private readonly skip: boolean;
  private readonly spaced: boolean;
  private emitted = '';
  private finished = false;
  // byte-level path
  private utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private inRun = false;
  private subTexts = 0;
  // generic path
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;

  constructor(
    private readonly tokenizer: TokenSource,
    options: DetokenizerOptions = {},
  ) {
    this.skip = options.skipSpecialTokens ?? false;
    this.spaced = options.spacesBetweenSpecialTokens ?? false;
    if (!tokenizer.byteLevel && options.promptIds?.length) {
      const context = options.promptIds.slice(-PROMPT_CONTEXT).filter((id) => this.keeps(id));
      this.ids.push(...context);
      this.prefixOffset = 0;
      this.readOffset = context.length;
    }
  }

  /** All text emitted so far. */
  get text(): string {
    return this.emitted;
  }

  /** Adds one generated id; returns the text it completes (often "", never half a character). */
  push(id: number): string {
    if (this.finished) throw new Error('IncrementalDetokenizer: push after finish');
    if (!this.keeps(id)) return '';
    const delta = this.tokenizer.byteLevel ? this.pushByteLevel(id) : this.pushGeneric(id);
    this.emitted += delta;
    return delta;
  }

  /** Ends the stream: emits what is held back (an unfinished character becomes U+FFFD). */
  finish(): string {
    if (this.finished) return '';
    this.finished = true;
    let delta: string;
    if (this.tokenizer.byteLevel) {
      delta = this.utf8.decode();
    } else {
      const before = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
      delta = this.decode(this.ids.slice(this.prefixOffset)).slice(before.length);
    }
    this.emitted += delta;
    return delta;
  }

  private keeps(id: number): boolean {
    return this.tokenizer.idToToken(id) !== undefined && !(this.skip && this.tokenizer.specialTokenIds.has(id));
  }

  private pushByteLevel(id: number): string {
    const token = this.tokenizer.idToToken(id)!;
    if (this.tokenizer.isAddedToken(id)) {
      // An added token closes the current run: flush its held-back bytes as the full decode would.
      const tail = this.inRun ? this.utf8.decode() : '';
      this.inRun = false;
      return tail + this.separator() + token;
    }
    const start = this.inRun ? '' : this.separator();
    this.inRun = true;
    const bytes = new Uint8Array(token.length);
    let n = 0;
    for (const ch of token) bytes[n++] = CHAR_TO_BYTE.get(ch) ?? 0;
    return start + this.utf8.decode(bytes.subarray(0, n), { stream: true });
  }

  /** " " before every sub-text but the first, when spaces between special tokens are asked for. */
  private separator(): string {
    const sep = this.spaced && this.subTexts > 0 ? ' ' : '';
    this.subTexts++;
    return sep;
  }

  private pushGeneric(id: number): string {
    this.ids.push(id);
    const before = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const after = this.decode(this.ids.slice(this.prefixOffset));
    if (after.length <= before.length || after.endsWith('\uFFFD')) return '';
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return after.slice(before.length);
  }

  private decode(ids: number[]): string {
    return this.tokenizer.decode(ids, {
      skipSpecialTokens: this.skip,
      spacesBetweenSpecialTokens: this.spaced,
      cleanUpTokenizationSpaces: false,
    });
  }
}
