/**
 * One choice's sampling, from the engine's SamplingParams to the fields of llama.cpp's completion
 * request (tools/server `params_from_json_cmpl`), which wllama passes through unchanged.
 *
 * The values are vLLM's after the engine's own normalisation (`resolveSampling`: temperature in
 * (0, 0.01) raised, top_k >= V disabled, logit_bias clamped), so both backends start from the same
 * numbers. Then:
 * - every llama.cpp default that is not neutral is set explicitly (its server defaults are
 *   temperature 0.8, top_k 40, top_p 0.95, min_p 0.05 and a repetition window of 64 tokens);
 * - the sampler order is Hearth's (reference/sampler.ts): penalties, temperature, min_p, top_k,
 *   top_p; llama.cpp always applies logit_bias first, before the penalties;
 * - the repetition window is the whole context (`repeat_last_n`: the context length; wllama's
 *   schema refuses llama.cpp's -1); llama.cpp's penalties count
 *   the prompt's tokens too, so presence/frequency penalties also see the prompt (vLLM's count only
 *   the output): a documented difference (docs/cpu-backend.md);
 * - the 64-bit seed becomes llama.cpp's u32 seed (both halves mixed); 0xFFFFFFFF, llama.cpp's
 *   "random", is never produced;
 * - allowed_token_ids becomes a -inf bias on every other id, and min_tokens a -inf bias on the
 *   stop ids for the first `minTokens` tokens (`phase: 'min-tokens'`, see cpu-choice.ts);
 * - greedy is temperature 0 (llama.cpp's temperature sampler then keeps only the best logit).
 *
 * Not here: running a request (cpu-choice.ts), what a backend refuses (the service, with the
 * engine's capabilities).
 */
import type { ResolvedSampling } from '../sampling/sampling-params';

/** The llama.cpp completion fields Hearth sets (names as the server reads them). */
export interface LlamaSampling {
  temperature: number;
  top_k: number;
  top_p: number;
  min_p: number;
  repeat_penalty: number;
  repeat_last_n: number;
  presence_penalty: number;
  frequency_penalty: number;
  seed: number;
  /** [token id, bias]; -Infinity is sent as false (llama.cpp's "never"). */
  logit_bias: [number, number | false][];
  samplers: string[];
  /** Alternatives per token with their raw logprobs (0: none). */
  n_probs: number;
  /** Raw logprobs (before the samplers), as vLLM's default logprobs. */
  post_sampling_probs: false;
  /** Samplers that llama.cpp runs by default and vLLM has not: off. */
  typical_p: 1;
  dry_multiplier: 0;
  xtc_probability: 0;
  top_n_sigma: -1;
  mirostat: 0;
  min_keep: 0;
}

/** Hearth's order of the sampling steps (reference/sampler.ts), in llama.cpp's sampler names. */
export const SAMPLER_ORDER: readonly string[] = ['penalties', 'temperature', 'min_p', 'top_k', 'top_p'];

/** llama.cpp's LLAMA_DEFAULT_SEED, which means "draw a random seed". */
const RANDOM_SEED = 0xffffffff;

/** A u32 seed from the two halves of the 64-bit one (never llama.cpp's "random" value). */
export function llamaSeed(seedLo: number, seedHi: number): number {
  const mixed = (seedLo ^ Math.imul(seedHi, 0x9e3779b1)) >>> 0;
  return mixed === RANDOM_SEED ? RANDOM_SEED - 1 : mixed;
}

export interface SamplingPhase {
  /** The first `minTokens` tokens are sampled with the stop ids masked. */
  phase: 'min-tokens' | 'free';
  vocabSize: number;
  /** llama.cpp's context (n_ctx): the repetition penalties look this far back, i.e. at everything. */
  contextLength: number;
  /**
   * The response shows logprobs: llama.cpp then computes the distribution of every token (at
   * least the sampled token's logprob, so n_probs >= 1), which costs a sort of the vocabulary per
   * token, so it is asked for only then.
   */
  logprobs: boolean;
}

/** The llama.cpp fields of one choice in one phase. */
export function llamaSampling(r: ResolvedSampling, { phase, vocabSize, contextLength, logprobs }: SamplingPhase): LlamaSampling {
  const bias = new Map<number, number | false>(r.logitBias.map(([id, b]) => [id, b]));
  if (r.allowedTokenIds) {
    const allowed = new Set(r.allowedTokenIds);
    for (let id = 0; id < vocabSize; id++) if (!allowed.has(id)) bias.set(id, false);
  }
  if (phase === 'min-tokens') for (const id of r.minTokensStopIds) bias.set(id, false);
  return {
    // resolveSampling gives greedy rows temperature 1 (the GPU skips it); llama.cpp needs 0.
    temperature: r.greedy ? 0 : r.temperature,
    top_k: r.topK,
    top_p: r.topP,
    min_p: r.minP,
    repeat_penalty: r.repetitionPenalty,
    repeat_last_n: contextLength,
    presence_penalty: r.presencePenalty,
    frequency_penalty: r.frequencyPenalty,
    seed: llamaSeed(r.seedLo, r.seedHi),
    logit_bias: [...bias].sort((a, b) => a[0] - b[0]),
    samplers: [...SAMPLER_ORDER],
    n_probs: logprobs ? Math.max(1, r.topLogprobs) : 0,
    post_sampling_probs: false,
    typical_p: 1,
    dry_multiplier: 0,
    xtc_probability: 0,
    top_n_sigma: -1,
    mirostat: 0,
    min_keep: 0,
  };
}
