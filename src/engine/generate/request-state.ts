/**
 * The scheduler's view of one GenerationRequest: the checks a request must pass before it may wait
 * (`validateRequest`: a request that can never run fails at once with the reason), its choices (or
 * beams), the rows it reserved,
 * its adapter, its phase, and the rules applied to every sampled token: stop on EOS (unless
 * ignore_eos) or a stop token id, then length (max_tokens, the context length), in that order
 * (docs/reference/vllm-chat.md §3.2, the newer order), a terminated grammar ending the choice with "stop"; and the
 * ids bad_words ban at the next step (a word whose prefix ends the output bans its last token).
 *
 * Not here: GPU steps (model-runner.ts), the loop (scheduler.ts), beams (beam-search.ts).
 */
import { KV_BLOCK, NO_ADAPTER } from '../kernels/kv-layout';
import type { BeamSearch } from './beam-search';
import type { EventStream } from './event-stream';
import type { Sequence } from './sequence';
import type { FinishReason, GenerationRequest, PromptLogprob, SampledToken, TokenConstraint } from './types';
import { MAX_TOP_LOGPROBS } from '../sampling/logprobs';
import { type SamplingParams } from '../sampling/sampling-params';

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

/** What a request is checked against before it may wait for admission. */
export interface RequestLimits {
  maxModelLen: number;
  vocabSize: number;
  /** Sequences decoded at once (block-table rows). */
  maxSeqs: number;
  /** Blocks of the whole KV cache. */
  numBlocks: number;
  /** Blocks one sequence of `tokens` positions holds at most (fewer than all with a sliding window: KvBlockManager.blocksToHold). */
  seqBlocks?: (tokens: number) => number;
  /** A hybrid model's pool for its sliding layers: its blocks and what one sequence holds there. */
  localPool?: { numBlocks: number; seqBlocks: (tokens: number) => number };
}

/** Requests that can never run fail before they wait: throws with the reason. */
export function validateRequest(req: GenerationRequest, limits: RequestLimits): void {
  const P = req.promptTokenIds.length;
  const { maxModelLen } = limits;
  const V = limits.vocabSize;
  if (P === 0) throw new Error('The prompt is empty: at least one token is needed.');
  if (req.promptTokenIds.some((t) => !Number.isInteger(t) || t < 0 || t >= V))
    throw new Error(`The prompt contains a token id outside [0, ${V}).`);
  if (!Number.isInteger(req.n) || req.n < 1) throw new Error(`n must be at least 1, got ${req.n}.`);
  if (req.sampling.length !== req.n) throw new Error(`${req.sampling.length} sampling parameter sets for n = ${req.n}.`);
  if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1) throw new Error(`max_tokens must be at least 1, got ${req.maxTokens}.`);
  if (P >= maxModelLen)
    throw new Error(`This model's maximum context length is ${maxModelLen} tokens. However, your request has ${P} input tokens.`);
  if (req.n > limits.maxSeqs) throw new Error(`n = ${req.n} exceeds the ${limits.maxSeqs} sequences this engine decodes at once.`);
  const tokens = Math.min(P + req.maxTokens, maxModelLen);
  const oneSeq = limits.seqBlocks ? limits.seqBlocks(tokens) : Math.ceil(tokens / KV_BLOCK);
  if (oneSeq > limits.numBlocks)
    throw new Error(`The request needs ${oneSeq * KV_BLOCK} tokens of KV cache; the cache holds ${limits.numBlocks * KV_BLOCK}.`);
  const local = limits.localPool;
  if (local && local.seqBlocks(tokens) > local.numBlocks)
    throw new Error(
      `The request needs ${local.seqBlocks(tokens) * KV_BLOCK} tokens of KV cache in the sliding-window layers; they hold ${local.numBlocks * KV_BLOCK}.`,
    );
  if (req.promptLogprobs !== null && (req.promptLogprobs < 0 || req.promptLogprobs > MAX_TOP_LOGPROBS)) {
    throw new Error(`prompt_logprobs must be in [0, ${MAX_TOP_LOGPROBS}], got ${req.promptLogprobs}.`);
  }
  if (req.beamSearch) {
    if (2 * req.n > MAX_TOP_LOGPROBS)
      throw new Error(
        `Beam search of width ${req.n} needs ${2 * req.n} candidates per beam; at most ${MAX_TOP_LOGPROBS} are computed (width <= ${MAX_TOP_LOGPROBS / 2}).`,
      );
    if (req.constraints?.some((c) => c !== null)) throw new Error('Beam search cannot be combined with structured outputs.');
  }
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
    this.stream.push({
      type: 'finished',
      choice,
      reason: finish.reason,
      stopTokenId: finish.stopTokenId,
      ...(cumulativeLogprob !== undefined ? { cumulativeLogprob } : {}),
    });
  }
}
