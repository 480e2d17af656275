/**
 * The scheduler's view of one GenerationRequest: its choices (or beams), the rows it reserved,
 * its adapter, its phase, and the rules applied to every sampled token: stop on EOS (unless
 * ignore_eos) or a stop token id, then length (max_tokens, the context length), in that order
 * (vllm-chat.md §3.2, the newer order), a terminated grammar ending the choice with "stop"; and the
 * ids bad_words ban at the next step (a word whose prefix ends the output bans its last token).
 *
 * Not here: GPU steps (model-runner.ts), the loop (scheduler.ts), beams (beam-search.ts).
 */
import { NO_ADAPTER } from '../model/kv-cache';
import type { BeamSearch } from './beam-search';
import type { EventStream } from './event-stream';
import type { Sequence } from './sequence';
import type { FinishReason, GenerationRequest, PromptLogprob, SampledToken, TokenConstraint } from './types';
import type { SamplingParams } from './sampling-params';

export type RequestPhase = 'waiting' | 'prefill' | 'decode' | 'done';

export interface Finish {
  reason: FinishReason;
  stopTokenId: number | null;
}

export class ChoiceState {
  /** The sequence decoding this choice (null before the prompt forks, after it finishes). */
  seq: Sequence | null = null;
  readonly output: number[] = [];
  finished = false;
  /** Its blocks were taken back under memory pressure: the sequence is recomputed before it goes on. */
  preempted = false;
  private readonly eos: ReadonlySet<number>;
  private readonly stopIds: ReadonlySet<number>;

  constructor(
    readonly index: number,
    readonly sampling: SamplingParams,
    readonly constraint: TokenConstraint | null,
  ) {
    this.eos = new Set(sampling.ignoreEos ? [] : (sampling.eosTokenIds ?? []));
    this.stopIds = new Set(sampling.stopTokenIds ?? []);
  }

  /**
   * After `token` was appended to the output: why the choice ends, or null. EOS / stop ids first,
   * then length; a grammar that reached its end stops the choice too.
   */
  finishAfter(token: number, maxTokens: number, totalLength: number, maxModelLen: number): Finish | null {
    if (this.eos.has(token)) return { reason: 'stop', stopTokenId: null };
    if (this.stopIds.has(token)) return { reason: 'stop', stopTokenId: token };
    if (this.constraint?.isTerminated()) return { reason: 'stop', stopTokenId: null };
    if (this.output.length >= maxTokens || totalLength >= maxModelLen) return { reason: 'length', stopTokenId: null };
    return null;
  }
}

/** Ids bad_words ban after `output`: single-token words always, longer ones when their prefix ends the output. */
export function bannedByBadWords(badWords: readonly (readonly number[])[], output: readonly number[]): number[] {
  const out: number[] = [];
  for (const w of badWords) {
    if (w.length === 0) continue;
    const prefix = w.length - 1;
    if (prefix > output.length) continue;
    let match = true;
    for (let i = 0; i < prefix && match; i++) match = output[output.length - prefix + i] === w[i];
    if (match) out.push(w[w.length - 1]);
  }
  return out;
}

let nextRequestId = 1;

export class RequestState {
  readonly id = nextRequestId++;
  phase: RequestPhase = 'waiting';
  /** Block-table rows reserved for the request's choices (or beams), choice i on rows[i] at the fork. */
  rows: number[] = [];
  adapterSlot = NO_ADAPTER;
  adapterAcquired = false;
  /** The prompt being prefilled (choice 0's sequence once it forks). */
  promptSeq: Sequence | null = null;
  /** Prompt tokens whose K/V came from the prefix cache. */
  cachedTokens = 0;
  /** Prompt logprobs gathered chunk by chunk; position 0 is null as in vLLM. */
  promptLogprobs: (PromptLogprob | null)[] | null;
  readonly choices: ChoiceState[];
  /** Set when the caller went away or aborted. */
  cancelled = false;
  /** Admission order: the newest requests are preempted first. */
  admitOrder = 0;
  beam: BeamSearch | null = null;

  constructor(
    readonly req: GenerationRequest,
    readonly stream: EventStream,
    /** Prefix-cache root of the request (salt and adapter). */
    readonly root: string,
  ) {
    this.promptLogprobs = req.promptLogprobs === null ? null : [null];
    this.choices = Array.from({ length: req.n }, (_, i) => new ChoiceState(i, req.sampling[i], req.constraints?.[i] ?? null));
  }

  get prompt(): readonly number[] {
    return this.req.promptTokenIds;
  }

  get adapterKey(): string | null {
    return this.req.adapter?.key ?? null;
  }

  /** Every choice has finished (or the request was cancelled). */
  get settled(): boolean {
    return this.cancelled || this.choices.every((c) => c.finished);
  }

  emitTokens(choice: number, tokens: SampledToken[]): void {
    this.stream.push({ type: 'tokens', choice, tokens });
  }

  emitFinished(choice: number, finish: Finish, cumulativeLogprob?: number): void {
    this.stream.push({ type: 'finished', choice, reason: finish.reason, stopTokenId: finish.stopTokenId, ...(cumulativeLogprob !== undefined ? { cumulativeLogprob } : {}) });
  }
}
