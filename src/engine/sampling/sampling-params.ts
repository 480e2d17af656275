/**
 * SamplingParams: the engine's own description of how one sequence (one choice) is sampled, and
 * its resolution into the values the GPU sampler receives (ResolvedSampling).
 *
 * The service converts a chat request into this type (after validating it with vLLM's messages);
 * the engine never sees request objects. `resolveSampling` applies vLLM's `SamplingParams`
 * normalisation (temperature in (0, 0.01) raised to 0.01, temperature 0 meaning greedy, top_k 0 / -1
 * / >= V meaning disabled, logit_bias clamped to [-100, 100]) and refuses values the GPU cannot
 * honour.
 *
 * The ranges of the sampling controls and their vLLM messages are one table here
 * (`samplingRangeError`), which the chat service checks requests with before they reach the engine.
 * Not here: the per-step row the GPU sampler reads (sampler-row.ts), the logprob result types
 * (logprobs.ts), request validation with vLLM's error texts (src/api), bad-word matching (the caller
 * lists the banned ids of each step), stop strings and finish logic (the generation core).
 * Reference: docs/reference/vllm-chat.md §2 and §3.
 */
import { MAX_TOP_LOGPROBS } from './logprobs';

/** vLLM clamps every logit_bias value to [-100, 100]. */
export const LOGIT_BIAS_LIMIT = 100;
/** vLLM raises temperatures in (0, 0.01) to 0.01 (`_MAX_TEMP`) before the greedy test. */
export const MIN_TEMPERATURE = 0.01;
/** Below this temperature a row is greedy (`_SAMPLING_EPS`); after the raise only 0 qualifies. */
export const GREEDY_EPSILON = 1e-5;

/** What the service gives the engine for one sequence; omitted fields take vLLM's defaults. */
export interface SamplingParams {
  /** >= 0; 0 is greedy. Values in (0, 0.01) are raised to 0.01 as vLLM does. Default 1. */
  temperature?: number;
  /** In (0, 1]. Default 1 (disabled). */
  topP?: number;
  /** 0 or -1 disables; >= vocab size acts as disabled. Default 0. */
  topK?: number;
  /** In [0, 1]. Default 0 (disabled). */
  minP?: number;
  /** > 0, multiplicative over prompt and output tokens. Default 1 (neutral). */
  repetitionPenalty?: number;
  /** In [-2, 2], times the count of the token in the output. Default 0. */
  frequencyPenalty?: number;
  /** In [-2, 2], once if the token occurs in the output. Default 0. */
  presencePenalty?: number;
  /**
   * 64-bit seed of the noise; choice i of an `n` request gets seed + i (the service does it).
   * Omitted: a random seed is drawn at admission (vLLM's unseeded requests are random too).
   */
  seed?: bigint | number;
  /** token id -> additive bias; values are clamped to [-100, 100]. */
  logitBias?: ReadonlyMap<number, number> | Readonly<Record<string, number>>;
  /** When given (non-empty), only these ids can be sampled. */
  allowedTokenIds?: readonly number[];
  /** While fewer tokens than this were generated, every stop id is masked. Default 0. */
  minTokens?: number;
  /** EOS ids of the model (tokenizer + generation_config). */
  eosTokenIds?: readonly number[];
  /** EOS neither ends the output nor counts as a min_tokens stop id. */
  ignoreEos?: boolean;
  /** The request's stop_token_ids. */
  stopTokenIds?: readonly number[];
  /** Alternatives returned per position, 0..20 (the chosen token's logprob always comes back). */
  topLogprobs?: number;
  /** 'sampled-first' (default): vLLM's order; 'rank': plain top-k by raw logprob (beam search). */
  topLogprobsOrder?: 'sampled-first' | 'rank';
  /**
   * false: the response shows no logprobs, so a backend for which they cost time (the CPU backend
   * sorts the vocabulary for them) may leave them out. Default true.
   */
  returnLogprobs?: boolean;
}

/** SamplingParams after vLLM's normalisation; every field is what the GPU row receives. */
export interface ResolvedSampling {
  greedy: boolean;
  /** f32; 1 for greedy rows (the temperature is not applied to them). */
  temperature: number;
  /** 1 means disabled. */
  topP: number;
  /** 0 means disabled (also when the request asked for >= vocab size). */
  topK: number;
  /** 0 means disabled. */
  minP: number;
  repetitionPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  seedLo: number;
  seedHi: number;
  /** Sorted by token id, values clamped and rounded to f32. */
  logitBias: ReadonlyArray<readonly [number, number]>;
  /** Sorted unique ids, or null when every id is allowed. */
  allowedTokenIds: Uint32Array | null;
  minTokens: number;
  /** EOS ids (unless ignoreEos) and stop_token_ids, sorted unique: masked while output < minTokens. */
  minTokensStopIds: Uint32Array;
  topLogprobs: number;
  topByRank: boolean;
}

/** The sampling controls whose ranges vLLM checks, after defaults (SamplingParams._verify_args). */
export type SamplingControls = Required<
  Pick<
    SamplingParams,
    'temperature' | 'topP' | 'topK' | 'minP' | 'repetitionPenalty' | 'frequencyPenalty' | 'presencePenalty' | 'minTokens'
  >
>;

interface RangeRule {
  /** The request field (vLLM's `param`). */
  param: string;
  ok(s: SamplingControls): boolean;
  /** vLLM's message; `float` writes a float value (the service passes Python's repr). */
  message(s: SamplingControls, float: (x: number) => string): string;
}

/**
 * The one table of sampling ranges and their messages, in vLLM's order. The engine refuses with
 * it (resolveSampling); the chat service checks requests with it first, so its 400s and the
 * engine's refusals read the same.
 */
const SAMPLING_RANGES: readonly RangeRule[] = [
  {
    param: 'presence_penalty',
    ok: (s) => s.presencePenalty >= -2 && s.presencePenalty <= 2,
    message: (s, f) => `presence_penalty must be in [-2, 2], got ${f(s.presencePenalty)}.`,
  },
  {
    param: 'frequency_penalty',
    ok: (s) => s.frequencyPenalty >= -2 && s.frequencyPenalty <= 2,
    message: (s, f) => `frequency_penalty must be in [-2, 2], got ${f(s.frequencyPenalty)}.`,
  },
  {
    param: 'repetition_penalty',
    ok: (s) => Number.isFinite(s.repetitionPenalty) && s.repetitionPenalty > 0,
    message: (s, f) => `repetition_penalty must be greater than zero, got ${f(s.repetitionPenalty)}.`,
  },
  {
    param: 'temperature',
    ok: (s) => Number.isFinite(s.temperature) && s.temperature >= 0,
    message: (s, f) => `temperature must be non-negative, got ${f(s.temperature)}.`,
  },
  { param: 'top_p', ok: (s) => s.topP > 0 && s.topP <= 1, message: (s, f) => `top_p must be in (0, 1], got ${f(s.topP)}.` },
  {
    param: 'top_k',
    ok: (s) => Number.isInteger(s.topK) && (s.topK === -1 || s.topK >= 0),
    message: (s) => `top_k must be 0 (disable), or at least 1, got ${s.topK}.`,
  },
  { param: 'min_p', ok: (s) => s.minP >= 0 && s.minP <= 1, message: (s, f) => `min_p must be in [0, 1], got ${f(s.minP)}.` },
  {
    param: 'min_tokens',
    ok: (s) => Number.isInteger(s.minTokens) && s.minTokens >= 0,
    message: (s) => `min_tokens must be greater than or equal to 0, got ${s.minTokens}.`,
  },
];

/** The first sampling control out of its range, with its field and message; null when all are in range. */
export function samplingRangeError(s: SamplingControls, float: (x: number) => string = String): { param: string; message: string } | null {
  const broken = SAMPLING_RANGES.find((rule) => !rule.ok(s));
  return broken ? { param: broken.param, message: broken.message(s, float) } : null;
}

export class SamplingParamsError extends RangeError {
  override name = 'SamplingParamsError';
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new SamplingParamsError(message);
}

function checkIds(ids: readonly number[], vocabSize: number, what: string): void {
  for (const id of ids) {
    check(Number.isInteger(id) && id >= 0 && id < vocabSize, `${what} contains token id ${id}, outside [0, ${vocabSize}).`);
  }
}

export function sortedUnique(ids: Iterable<number>): Uint32Array {
  return Uint32Array.from(new Set(ids)).sort();
}

/** Splits a 64-bit seed (negative values wrap, like int64 bits) into two u32 words. */
export function splitSeed(seed: bigint | number): { seedLo: number; seedHi: number } {
  const s = BigInt.asUintN(64, typeof seed === 'bigint' ? seed : BigInt(Math.trunc(seed)));
  return { seedLo: Number(s & 0xffffffffn), seedHi: Number(s >> 32n) };
}

function randomSeed(): bigint {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (BigInt(words[1]) << 32n) | BigInt(words[0]);
}

/** Applies vLLM's defaults and normalisation; throws SamplingParamsError on values out of range. */
export function resolveSampling(p: SamplingParams, vocabSize: number): ResolvedSampling {
  const controls: SamplingControls = {
    temperature: p.temperature ?? 1,
    topP: p.topP ?? 1,
    topK: p.topK ?? 0,
    minP: p.minP ?? 0,
    repetitionPenalty: p.repetitionPenalty ?? 1,
    frequencyPenalty: p.frequencyPenalty ?? 0,
    presencePenalty: p.presencePenalty ?? 0,
    minTokens: p.minTokens ?? 0,
  };
  const outOfRange = samplingRangeError(controls);
  if (outOfRange) throw new SamplingParamsError(outOfRange.message);
  const { topP, topK, minP, repetitionPenalty, frequencyPenalty, presencePenalty, minTokens } = controls;
  let temperature = controls.temperature;
  if (temperature > 0 && temperature < MIN_TEMPERATURE) temperature = MIN_TEMPERATURE;
  const greedy = temperature < GREEDY_EPSILON;
  const topLogprobs = p.topLogprobs ?? 0;
  check(
    Number.isInteger(topLogprobs) && topLogprobs >= 0 && topLogprobs <= Math.min(MAX_TOP_LOGPROBS, vocabSize),
    `top logprobs must be in [0, ${Math.min(MAX_TOP_LOGPROBS, vocabSize)}], got ${topLogprobs}.`,
  );

  const bias = new Map<number, number>();
  const entries =
    p.logitBias instanceof Map ? [...p.logitBias] : Object.entries(p.logitBias ?? {}).map(([k, v]) => [Number(k), v] as const);
  for (const [id, value] of entries) {
    checkIds([id], vocabSize, 'logit_bias');
    check(Number.isFinite(value), `logit_bias value for token ${id} must be finite, got ${value}.`);
    bias.set(id, Math.fround(Math.max(-LOGIT_BIAS_LIMIT, Math.min(LOGIT_BIAS_LIMIT, value))));
  }

  let allowedTokenIds: Uint32Array | null = null;
  if (p.allowedTokenIds !== undefined) {
    check(p.allowedTokenIds.length > 0, 'allowed_token_ids is not None and empty!');
    checkIds(p.allowedTokenIds, vocabSize, 'allowed_token_ids');
    allowedTokenIds = sortedUnique(p.allowedTokenIds);
  }
  const eos = p.ignoreEos ? [] : (p.eosTokenIds ?? []);
  const stops = p.stopTokenIds ?? [];
  checkIds(eos, vocabSize, 'eos_token_ids');
  checkIds(stops, vocabSize, 'stop_token_ids');

  return {
    greedy,
    temperature: greedy ? 1 : Math.fround(temperature),
    topP: greedy ? 1 : Math.fround(topP),
    topK: greedy || topK <= 0 || topK >= vocabSize ? 0 : topK,
    minP: greedy ? 0 : Math.fround(minP),
    repetitionPenalty: Math.fround(repetitionPenalty),
    frequencyPenalty: Math.fround(frequencyPenalty),
    presencePenalty: Math.fround(presencePenalty),
    ...splitSeed(p.seed ?? randomSeed()),
    logitBias: [...bias].sort((a, b) => a[0] - b[0]),
    allowedTokenIds,
    minTokens,
    minTokensStopIds: sortedUnique([...eos, ...stops]),
    topLogprobs,
    topByRank: p.topLogprobsOrder === 'rank',
  };
}
