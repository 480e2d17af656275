/**
 * Reference logprobs in plain TypeScript: log-softmax statistics of a logits row, the top-k by raw
 * logprob, vLLM's sampled-token-first ordering of top_logprobs, and prompt logprobs (logprob and
 * rank of the actual next token plus the top-k). The oracle of test/gpu/logprobs*.test.ts and of
 * the sampler's logprob outputs.
 *
 * Semantics (docs/reference/vllm-chat.md §3.3): logprobs are raw (log_softmax of the
 * logits before any sampling parameter), floored at -9999; a rank is 1 + the number of other
 * tokens with a logprob >= the token's (vLLM's `batched_count_greater_than` counts `x >= value`,
 * the token included); top-k ties are broken by the lower token id (torch.topk leaves them
 * unspecified). Computed in f64 and rounded to f32 at the end.
 * Not here: the sampling pipeline (sampler.ts) and token strings (the service decodes ids).
 */

import type { PositionLogprobs, TokenLogprob } from '../sampling/logprobs';

export type { PositionLogprobs, TokenLogprob };

export const LOGPROB_FLOOR = -9999;

/** max(v, -9999) rounded to f32: what every logprob returned to a client goes through. */
export function floorLogprob(v: number): number {
  return Math.fround(Math.max(v, LOGPROB_FLOOR));
}

/** log(sum(exp(x))) in f64; -Infinity entries (masked tokens) contribute nothing. */
export function logSumExp(x: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < x.length; i++) if (x[i] > max) max = x[i];
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += Math.exp(x[i] - max);
  return max + Math.log(sum);
}

/** Token ids of x sorted by value descending, ties by the lower id. */
export function rankOrder(x: ArrayLike<number>): number[] {
  const ids = Array.from({ length: x.length }, (_, i) => i);
  return ids.sort((a, b) => x[b] - x[a] || a - b);
}

/** The k largest raw logprobs of row x (log-sum-exp lse), best first. */
export function topByRank(x: ArrayLike<number>, lse: number, k: number): TokenLogprob[] {
  return rankOrder(x)
    .slice(0, k)
    .map((id) => ({ id, logprob: floorLogprob(x[id] - lse) }));
}

/**
 * vLLM's top_logprobs list: the dict {sampled token, top1..topk} in insertion order, without
 * duplicates, first k entries (`_make_logprob_dict` then the chat layer's slice).
 */
export function sampledFirst(sampled: TokenLogprob, byRank: readonly TokenLogprob[], k: number): TokenLogprob[] {
  if (k === 0) return [];
  const out = [sampled];
  for (const entry of byRank) {
    if (out.length === k) break;
    if (entry.id !== sampled.id) out.push(entry);
  }
  return out;
}

/** 1 + the number of other tokens whose logit is >= x[id]: vLLM's rank. */
export function rankOf(x: ArrayLike<number>, id: number): number {
  let n = 0;
  for (let i = 0; i < x.length; i++) if (x[i] >= x[id]) n++;
  return n;
}

/**
 * Prompt logprobs over T rows of logits [T, V]: row t predicts targets[t] (the prompt token that
 * follows position t). vLLM's first prompt position has no prediction; the caller leaves it out.
 */
export function promptLogprobsReference(
  logits: Float32Array, // (T, V)
  targets: ArrayLike<number>, // (T)
  V: number,
  k: number,
): PositionLogprobs[] {
  const T = targets.length;
  const out: PositionLogprobs[] = [];
  for (let t = 0; t < T; t++) {
    const x = logits.subarray(t * V, (t + 1) * V);
    const lse = logSumExp(x);
    const id = targets[t];
    out.push({ logprob: floorLogprob(x[id] - lse), rank: rankOf(x, id), top: topByRank(x, lse, k) });
  }
  return out;
}
