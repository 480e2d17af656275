/**
 * GrammarConstraint: one sequence's walk through a compiled grammar, as the engine's
 * TokenConstraint (src/engine/generate/types.ts): before each token the engine asks for the
 * bitmask of allowed ids (applied to the logits on the GPU), then reports the sampled id.
 *
 * - The grammar can start after a given token (`startAfterTokenId`, the `</think>` id): vLLM
 *   applies a structured-output grammar to the answer, not to the reasoning before it. Until then
 *   every token is allowed and the matcher does not move.
 * - The output stays valid UTF-8 (utf8-guard.ts): xgrammar's mask is ANDed with the guard's for
 *   the current position inside a multi-byte character.
 * - forcedTokens(): jump-forward decoding. When the grammar allows exactly one continuation
 *   (`"name": "` after `{` in a schema with one required key), xgrammar names the string; its
 *   canonical tokens (the tokenizer's own encoding, so a later turn's prompt tokenizes the same
 *   way), checked against the matcher, are offered to the engine as a draft that it verifies
 *   against the model's own choice at each position (engine/generate/jump-forward.ts). The last
 *   token of that string is left out, so the model may still merge it with what follows (the
 *   retokenisation problem of jump-forward decoding).
 * - rollback(n): undoes the last n accepted tokens (the engine fills the masks of a draft's
 *   positions by accepting it, then puts the matcher back).
 *
 * Not here: compiling (grammar-compiler.ts), the GPU side of the mask (engine/kernels/sampler).
 */
import type { TokenConstraint } from '../../engine/generate/types';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import type { Utf8Guard } from './utf8-guard';
import { XGrammarRuntime, type BindingRef, type MatcherHandle } from './xgrammar-runtime';

export interface GrammarConstraintOptions {
  /** Every token is free until this id has been accepted (the end of the reasoning). */
  startAfterTokenId?: number;
  /** Needed by forcedTokens() to turn the forced string into tokens; without it none are forced. */
  tokenizer?: ModelTokenizer;
}

export class GrammarConstraint implements TokenConstraint {
  private active: boolean;
  private terminated = false;
  /** Position inside a UTF-8 sequence (Utf8Guard state) of the constrained output. */
  private utf8State: number;
  private disposed = false;
  /** Per accepted token, the state before it (for rollback). */
  private readonly history: Array<{ active: boolean; terminated: boolean; utf8State: number; matched: boolean }> = [];
  private readonly words: number;
  private readonly scratch: Int32Array;

  constructor(
    private readonly handle: MatcherHandle,
    private readonly binding: BindingRef,
    /** Bits in the bitmask: the logits width. */
    readonly vocabSize: number,
    private readonly guard: Utf8Guard,
    private readonly options: GrammarConstraintOptions = {},
  ) {
    if (guard.vocabSize !== vocabSize)
      throw new Error(`GrammarConstraint: UTF-8 guard for ${guard.vocabSize} ids, grammar for ${vocabSize}`);
    this.active = options.startAfterTokenId === undefined;
    this.utf8State = 0;
    this.words = Math.ceil(vocabSize / 32);
    this.scratch = new Int32Array(this.words);
  }

  /** The grammar is in force (the start token, if any, has been seen). */
  get started(): boolean {
    return this.active;
  }

  fillNextTokenBitmask(bitmask: Int32Array): boolean {
    this.assertLive();
    if (!this.active) return false;
    if (this.terminated) throw new Error('GrammarConstraint: the grammar has terminated; the sequence should have finished with "stop"');
    if (bitmask.length < this.words)
      throw new Error(`GrammarConstraint: bitmask of ${bitmask.length} words, need ${this.words} for ${this.vocabSize} ids`);
    XGrammarRuntime.fillBitmask(this.binding, this.handle, this.vocabSize, this.scratch);
    const utf8 = this.guard.mask(this.utf8State);
    for (let i = 0; i < this.words; i++) this.scratch[i] &= utf8[i];
    bitmask.set(this.scratch);
    return !allAllowed(this.scratch, this.vocabSize);
  }

  acceptToken(tokenId: number): boolean {
    this.assertLive();
    const before = { active: this.active, terminated: this.terminated, utf8State: this.utf8State, matched: false };
    if (!this.active) {
      if (tokenId === this.options.startAfterTokenId) this.active = true;
      this.history.push(before);
      return true;
    }
    if (this.terminated || !Number.isInteger(tokenId) || tokenId < 0 || tokenId >= this.vocabSize) return false;
    const utf8 = this.guard.advance(this.utf8State, tokenId);
    if (utf8 < 0) return false;
    const accepted = this.handle.AcceptToken(tokenId, false);
    if (accepted) {
      this.terminated = this.handle.IsTerminated();
      this.utf8State = utf8;
      this.history.push({ ...before, matched: true });
    }
    return accepted;
  }

  rollback(count: number): void {
    this.assertLive();
    if (!Number.isInteger(count) || count < 0 || count > this.history.length)
      throw new Error(`GrammarConstraint: cannot roll back ${count} of ${this.history.length} tokens`);
    let matched = 0;
    for (let i = 0; i < count; i++) {
      const h = this.history.pop()!;
      if (h.matched) matched++;
      this.active = h.active;
      this.terminated = h.terminated;
      this.utf8State = h.utf8State;
    }
    if (matched > 0) this.handle.Rollback(matched);
  }

  isTerminated(): boolean {
    return this.terminated;
  }

  /** Ids the grammar forces next (not yet accepted: the engine appends them and accepts each). */
  forcedTokens(): number[] {
    this.assertLive();
    const tokenizer = this.options.tokenizer;
    // Mid-character the forced text would not start on a token boundary of its own.
    if (!this.active || this.terminated || !tokenizer || this.utf8State !== 0) return [];
    const forced = this.handle.FindJumpForwardString();
    if (forced === '') return [];
    const ids = tokenizer.encode(forced, { addSpecialTokens: false });
    // Keep the prefix the matcher (and the UTF-8 guard) accepts, then put the matcher back.
    let accepted = 0;
    let utf8 = this.utf8State;
    while (accepted < ids.length - 1) {
      const next = this.guard.advance(utf8, ids[accepted]);
      if (next < 0 || !this.handle.AcceptToken(ids[accepted], false)) break;
      utf8 = next;
      accepted++;
    }
    if (accepted > 0) this.handle.Rollback(accepted);
    return ids.slice(0, accepted);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.handle.delete();
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('GrammarConstraint used after dispose()');
  }
}

/** Every id below vocabSize has its bit set. */
function allAllowed(words: Int32Array, vocabSize: number): boolean {
  const full = vocabSize >>> 5;
  for (let i = 0; i < full; i++) if (words[i] !== -1) return false;
  const rest = vocabSize & 31;
  if (rest === 0) return true;
  const mask = rest === 32 ? -1 : (1 << rest) - 1;
  return (words[full] & mask) === mask;
}
