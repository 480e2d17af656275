/**
 * Utf8Guard: keeps a constrained output valid UTF-8, token by token.
 *
 * xgrammar 0.1.27 matches multi-byte characters leniently: it accepted bytes that never occur in
 * UTF-8 (C0, C1, F5..FF) and overlong or surrogate sequences (E0 80..9F) as one character each in
 * Hearth's tests, so a string of maxLength 4 could decode to six characters (each bad byte becomes
 * U+FFFD). With a byte-fallback vocabulary, a matcher of {type: string} accepts the overlong
 * C0 80 and E0 80 80 and the surrogate ED A0 80 between the quotes (no upstream issue found;
 * canaries: test/unit/structured/xgrammar-canaries.test.ts).
 * The guard tracks where the output stands inside a UTF-8 sequence (8 states) and, for
 * each state, masks the tokens whose bytes would break the sequence; GrammarConstraint ANDs that
 * mask into xgrammar's. Valid text is never refused.
 *
 * Token bytes: byte-level vocabularies map each character back through GPT-2's table; byte-fallback
 * ones spell bytes as <0xNN> and spaces as "▁"; added tokens and raw vocabularies are their UTF-8.
 *
 * Not here: the grammar (xgrammar), the bitmask application on the GPU.
 */
import { CHAR_TO_BYTE } from '../../engine/model/text/byte-level';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import type { VocabType } from './tokenizer-info';

/**
 * Where the output stands: index into STATES. 0: between characters; otherwise `need` more
 * continuation bytes are due, the next one within [lo, hi] (RFC 3629's table for the second byte).
 */
const STATES: readonly { need: number; lo: number; hi: number }[] = [
  { need: 0, lo: 0, hi: 0 },
  { need: 1, lo: 0x80, hi: 0xbf },
  { need: 2, lo: 0x80, hi: 0xbf },
  { need: 2, lo: 0xa0, hi: 0xbf },
  { need: 2, lo: 0x80, hi: 0x9f },
  { need: 3, lo: 0x80, hi: 0xbf },
  { need: 3, lo: 0x90, hi: 0xbf },
  { need: 3, lo: 0x80, hi: 0x8f },
];

const INVALID = -1;

/** The state after byte b in state s, or INVALID. */
function step(s: number, b: number): number {
  const { need, lo, hi } = STATES[s];
  if (need > 0) {
    if (b < lo || b > hi) return INVALID;
    return need === 1 ? 0 : need === 2 ? 1 : 2;
  }
  if (b <= 0x7f) return 0;
  if (b >= 0xc2 && b <= 0xdf) return 1;
  if (b === 0xe0) return 3;
  if (b === 0xed) return 4;
  if (b >= 0xe1 && b <= 0xef) return 2;
  if (b === 0xf0) return 6;
  if (b >= 0xf1 && b <= 0xf3) return 5;
  if (b === 0xf4) return 7;
  return INVALID;
}

const BYTE_FALLBACK = /^<0x([0-9A-F]{2})>$/;
const encoder = new TextEncoder();

/** The bytes a token adds to the output text. */
export function tokenBytes(tokenizer: ModelTokenizer, id: number, vocabType: VocabType): Uint8Array {
  const token = tokenizer.idToToken(id) ?? '';
  if (tokenizer.isAddedToken(id) || vocabType === 'raw') return encoder.encode(token);
  if (vocabType === 'byte_fallback') {
    const m = BYTE_FALLBACK.exec(token);
    return m ? Uint8Array.of(parseInt(m[1], 16)) : encoder.encode(token.replace(/\u2581/g, ' '));
  }
  const bytes: number[] = [];
  for (const ch of token) {
    const b = CHAR_TO_BYTE.get(ch);
    if (b === undefined) return encoder.encode(token);
    bytes.push(b);
  }
  return Uint8Array.from(bytes);
}

export class Utf8Guard {
  /** next[s * vocabSize + id]: the state after the token in state s, or INVALID. */
  private readonly next: Int8Array;
  private readonly masks: (Int32Array | null)[] = STATES.map(() => null);
  private readonly words: number;

  private constructor(
    readonly vocabSize: number,
    tokenizer: ModelTokenizer,
    vocabType: VocabType,
    private readonly passThrough: ReadonlySet<number>,
  ) {
    this.words = Math.ceil(vocabSize / 32);
    this.next = new Int8Array(STATES.length * vocabSize).fill(INVALID);
    for (let id = 0; id < Math.min(vocabSize, tokenizer.vocabSize); id++) {
      const bytes = tokenBytes(tokenizer, id, vocabType);
      for (let s = 0; s < STATES.length; s++) {
        let state = s;
        for (let i = 0; i < bytes.length && state !== INVALID; i++) state = step(state, bytes[i]);
        this.next[s * vocabSize + id] = state;
      }
    }
  }

  private static readonly cache = new WeakMap<ModelTokenizer, Map<string, Utf8Guard>>();

  /** The guard of a vocabulary; `stopTokenIds` pass in every state (they end the text). */
  static of(tokenizer: ModelTokenizer, vocabSize: number, vocabType: VocabType, stopTokenIds: readonly number[]): Utf8Guard {
    let byKey = Utf8Guard.cache.get(tokenizer);
    if (!byKey) Utf8Guard.cache.set(tokenizer, (byKey = new Map()));
    const key = `${vocabSize}:${vocabType}:${[...stopTokenIds].sort((a, b) => a - b).join(',')}`;
    let guard = byKey.get(key);
    if (!guard) byKey.set(key, (guard = new Utf8Guard(vocabSize, tokenizer, vocabType, new Set(stopTokenIds))));
    return guard;
  }

  /** The state of the empty output. */
  static readonly START = 0;

  /** The state after `tokenId`, or -1 when it would break UTF-8 (stop ids keep the state). */
  advance(state: number, tokenId: number): number {
    if (this.passThrough.has(tokenId)) return state;
    if (tokenId < 0 || tokenId >= this.vocabSize) return INVALID;
    return this.next[state * this.vocabSize + tokenId];
  }

  /** Bit set: the token keeps the output valid UTF-8 from this state (stop ids always). */
  mask(state: number): Int32Array {
    let mask = this.masks[state];
    if (!mask) {
      mask = new Int32Array(this.words);
      const base = state * this.vocabSize;
      for (let id = 0; id < this.vocabSize; id++)
        if (this.next[base + id] !== INVALID || this.passThrough.has(id)) mask[id >>> 5] |= 1 << (id & 31);
      this.masks[state] = mask;
    }
    return mask;
  }
}
