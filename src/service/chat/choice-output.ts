/**
 * ChoiceOutput: one choice's generated tokens turned into text, as vLLM's detokenizer and stop
 * checks do it, one engine event at a time. Per token: it is counted (usage, token_ids,
 * logprobs), decoded incrementally (never half a UTF-8 character; special tokens dropped with
 * skip_special_tokens), and checked against the stop strings once the output is longer than
 * min_tokens. A stop token (EOS, unless ignore_eos, or a stop_token_id) adds no text unless
 * include_stop_str_in_output.
 *
 * It knows when a token is the choice's last (a stop token, a stop string, max_tokens), so the
 * step carrying that token also carries the finish, as vLLM's final stream chunk carries the last
 * delta; a finish the engine reports otherwise (an abort, its own limits) arrives through `end`.
 * stop_reason follows vLLM: the stop string, or the stop token's id, except null for the
 * tokenizer's own EOS token (generation_config's other EOS ids are stop ids in vLLM).
 *
 * Not here: the output parsers (content / reasoning / tool calls), response and chunk shapes.
 * Reference: docs/reference/vllm-chat.md §3.2, §5.
 */
import type { FinishReason, SampledToken } from '../../engine/generate/types';
import type { IncrementalDetokenizer } from '../../engine/model/text/detokenizer';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import { StopStrings } from './stop-strings';

export interface ChoiceSettings {
  tokenizer: ModelTokenizer;
  promptIds: readonly number[];
  skipSpecialTokens: boolean;
  stop: readonly string[];
  includeStopStr: boolean;
  /** EOS ids that end a choice; empty with ignore_eos. */
  eosTokenIds: ReadonlySet<number>;
  /** The tokenizer's eos_token id, reported with stop_reason null. */
  primaryEos: number | null;
  /** The request's stop_token_ids. */
  stopTokenIds: ReadonlySet<number>;
  minTokens: number;
  maxTokens: number;
}

export type StopReason = number | string | null;

export interface ChoiceFinish {
  reason: FinishReason;
  stopReason: StopReason;
}

/** What one engine event did to a choice. */
export interface ChoiceStep {
  index: number;
  /** Text released by this step, after stop strings and their hold-back. */
  text: string;
  /** Tokens this step consumed: they count in usage, token_ids and logprobs. */
  tokens: SampledToken[];
  /** Set on the step that ends the choice. */
  finish: ChoiceFinish | null;
  /** A stop string ended the choice: the engine must stop generating it. */
  stoppedByString: boolean;
}

export class ChoiceOutput {
  readonly tokenIds: number[] = [];
  private finished: ChoiceFinish | null = null;
  private readonly detokenizer: IncrementalDetokenizer;
  private readonly stops: StopStrings;

  constructor(
    readonly index: number,
    private readonly s: ChoiceSettings,
  ) {
    // vLLM's fast-tokenizer detokenizer ignores spaces_between_special_tokens (see README).
    this.detokenizer = s.tokenizer.detokenizer({
      skipSpecialTokens: s.skipSpecialTokens,
      spacesBetweenSpecialTokens: false,
      promptIds: s.promptIds,
    });
    this.stops = new StopStrings(s.stop, s.includeStopStr);
  }

  get done(): boolean {
    return this.finished !== null;
  }

  get finish(): ChoiceFinish | null {
    return this.finished;
  }

  /** The choice's whole text so far (cut at a stop string). */
  get text(): string {
    return this.stops.text;
  }

  /** Consumes generated tokens; null once the choice has finished (late tokens are dropped). */
  push(tokens: readonly SampledToken[]): ChoiceStep | null {
    if (this.finished) return null;
    const consumed: SampledToken[] = [];
    let byString = false;
    for (const token of tokens) {
      consumed.push(token);
      this.tokenIds.push(token.id);
      const n = this.tokenIds.length;
      const isEos = this.s.eosTokenIds.has(token.id);
      const isStopToken = isEos || this.s.stopTokenIds.has(token.id);
      let matched: string | null = null;
      if (!isStopToken || this.s.includeStopStr) {
        matched = this.stops.append(this.detokenizer.push(token.id), n > this.s.minTokens);
      }
      if (matched !== null) {
        byString = true;
        this.finished = { reason: 'stop', stopReason: matched };
      } else if (isStopToken) {
        this.finished = { reason: 'stop', stopReason: isEos && token.id === this.s.primaryEos ? null : token.id };
      } else if (n >= this.s.maxTokens) {
        this.finished = { reason: 'length', stopReason: null };
      }
      if (this.finished) break;
    }
    if (this.finished && !byString) this.flush();
    return {
      index: this.index,
      text: this.stops.release(this.finished !== null),
      tokens: consumed,
      finish: this.finished,
      stoppedByString: byString,
    };
  }

  /** The engine ended the choice; null when a token already did. */
  end(reason: FinishReason, stopTokenId: number | null): ChoiceStep | null {
    if (this.finished) return null;
    this.finished = { reason, stopReason: stopTokenId };
    this.flush();
    return { index: this.index, text: this.stops.release(true), tokens: [], finish: this.finished, stoppedByString: false };
  }

  /** Releases what the detokenizer holds (an unfinished character becomes U+FFFD). */
  private flush(): void {
    const tail = this.detokenizer.finish();
    const matched = tail ? this.stops.append(tail, this.tokenIds.length > this.s.minTokens) : null;
    if (matched !== null) this.finished = { reason: 'stop', stopReason: matched };
  }
}
