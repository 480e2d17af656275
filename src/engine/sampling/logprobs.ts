/**
 * What the sampler and the prompt-logprobs pass return: token ids with their raw logprobs, and the
 * per-position record of prompt logprobs (vLLM's shapes). The GPU kernels (kernels/logprobs.ts),
 * the reference and the generation core share these types.
 * Reference: docs/reference/vllm-chat.md §3.
 */

/** vLLM's default `max_logprobs`: the most top logprobs (and beam candidates) per position. */
export const MAX_TOP_LOGPROBS = 20;

/** One entry of a returned logprob list: a token id and its raw logprob (floored at -9999). */
export interface TokenLogprob {
  id: number;
  logprob: number;
}

/** Prompt logprobs of one position: the actual token's logprob and rank, and the best k. */
export interface PositionLogprobs {
  /** Raw logprob of the actual token, floored at -9999. */
  logprob: number;
  /** 1 + the number of other tokens whose logit is >= the actual token's (vLLM's rank). */
  rank: number;
  /** The k best tokens by raw logprob, best first, ties to the lower id. */
  top: TokenLogprob[];
}
