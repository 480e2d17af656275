/**
 * Reference sampler in plain TypeScript: one logits row through vLLM's V1 pipeline, step by step,
 * written for clarity. The oracle of test/gpu/sampler*.test.ts; the GPU sampler
 * (kernels/sampler.ts) must choose the same token whenever the winner's perturbed score beats the
 * runner-up's by more than rounding (`margin` says by how much).
 *
 * Order (docs/reference/vllm-chat.md §3.1; vLLM applies the grammar bitmask in the
 * model runner, before the sampler, so raw logprobs see it):
 *   0. grammar bitmask -> -inf; raw logprobs = log_softmax of this row
 *   1. allowed_token_ids, 2. bad-word bans, 3. min_tokens (stop ids while output < min_tokens),
 *   4. logit_bias (additive), 5. penalties: repetition (prompt and output, divide positive logits,
 *      multiply the others), frequency (times the output count), presence (once if in the output)
 *   6. greedy rows: argmax here
 *   7. temperature, 8. min_p, 9. top_k (ties with the k-th value kept), 10. top_p (the smallest
 *      top set whose mass reaches top_p; ties with the boundary value kept), 11. Gumbel-max draw
 *      with the hash of sampler-noise.ts.
 * Element-wise steps round to f32 (Math.fround) where the GPU does; softmax sums run in f64.
 * Not here: stop detection, bad-word matching (the caller lists banned ids), the GPU layout.
 */
import type { ResolvedSampling } from '../sampling/sampling-params';
import { floorLogprob, logSumExp, sampledFirst, topByRank, type TokenLogprob } from './logprobs';
import { gumbel } from './sampler-noise';

export interface SampleRowInput {
  logits: Float32Array; // (V) raw logits of this row
  params: ResolvedSampling;
  /** Tokens generated so far: the noise step and the min_tokens test. */
  outputLen: number;
  promptTokens: ArrayLike<number>;
  /** The generated tokens so far (their counts drive the penalties). */
  outputTokens: ArrayLike<number>;
  bannedTokenIds?: readonly number[];
  grammarBitmask?: Int32Array | Uint32Array; // (ceil(V/32)), bit set = allowed
}

export interface SampleRowResult {
  token: number;
  /** Raw logprob of the token, floored at -9999. */
  logprob: number;
  /** The requested alternatives, in the requested order. */
  top: TokenLogprob[];
  /** log-sum-exp of the raw (grammar-masked) logits. */
  lse: number;
  /** Logits after steps 1-5 and the temperature (greedy rows: no temperature); -Infinity = masked. */
  processed: Float32Array;
  /** 1 where the token survived min_p, top_k and top_p (all unmasked tokens for greedy rows). */
  kept: Uint8Array;
  /** Winner's score minus the best other kept score (Infinity with one candidate). */
  margin: number;
}

function bit(mask: Int32Array | Uint32Array, i: number): boolean {
  return ((mask[i >>> 5] >>> (i & 31)) & 1) === 1;
}

/** Step 0: a copy of the row with grammar-disallowed ids at -Infinity. */
export function applyGrammar(x: Float32Array, mask?: Int32Array | Uint32Array): Float32Array {
  const out = Float32Array.from(x);
  if (mask) for (let i = 0; i < out.length; i++) if (!bit(mask, i)) out[i] = -Infinity;
  return out;
}

/** Steps 1-5 and 7: masks, bias, penalties, then temperature (not for greedy rows). */
export function processLogits(
  x: Float32Array, // (V) grammar-masked raw logits
  p: ResolvedSampling,
  outputLen: number,
  promptTokens: ArrayLike<number>,
  outputTokens: ArrayLike<number>,
  bannedTokenIds: readonly number[] = [],
): Float32Array {
  const V = x.length;
  const counts = new Uint32Array(V);
  for (let i = 0; i < outputTokens.length; i++) counts[outputTokens[i]]++;
  const inPrompt = new Uint8Array(V);
  for (let i = 0; i < promptTokens.length; i++) inPrompt[promptTokens[i]] = 1;
  const allowed = p.allowedTokenIds ? new Set(p.allowedTokenIds) : null;
  const banned = new Set<number>(bannedTokenIds);
  if (outputLen < p.minTokens) for (const id of p.minTokensStopIds) banned.add(id);
  const bias = new Map(p.logitBias);

  const z = new Float32Array(V);
  for (let i = 0; i < V; i++) {
    if (x[i] === -Infinity || (allowed && !allowed.has(i)) || banned.has(i)) {
      z[i] = -Infinity;
      continue;
    }
    let v = x[i];
    const b = bias.get(i);
    if (b !== undefined) v = Math.fround(v + b);
    const c = counts[i];
    if (c > 0 || inPrompt[i]) v = v > 0 ? Math.fround(v / p.repetitionPenalty) : Math.fround(v * p.repetitionPenalty);
    v = Math.fround(v - Math.fround(p.frequencyPenalty * c));
    if (c > 0) v = Math.fround(v - p.presencePenalty);
    if (!p.greedy) v = Math.fround(v / p.temperature);
    z[i] = v;
  }
  return z;
}

/** Step 8: keep tokens whose probability is at least min_p times the largest one. */
export function applyMinP(z: Float32Array, keep: Uint8Array, minP: number): void {
  if (minP <= 0) return;
  let max = -Infinity;
  for (let i = 0; i < z.length; i++) if (keep[i] && z[i] > max) max = z[i];
  let sum = 0;
  for (let i = 0; i < z.length; i++) if (keep[i]) sum += Math.exp(z[i] - max);
  const pmax = 1 / sum;
  for (let i = 0; i < z.length; i++) if (keep[i] && Math.exp(z[i] - max) / sum < minP * pmax) keep[i] = 0;
}

/** Step 9: keep values >= the k-th largest kept value (ties kept, as vLLM's `logits < kth` mask). */
export function applyTopK(z: Float32Array, keep: Uint8Array, k: number): void {
  if (k <= 0) return;
  const values: number[] = [];
  for (let i = 0; i < z.length; i++) if (keep[i]) values.push(z[i]);
  if (values.length <= k) return;
  values.sort((a, b) => b - a);
  const kth = values[k - 1];
  for (let i = 0; i < z.length; i++) if (keep[i] && z[i] < kth) keep[i] = 0;
}

/**
 * Step 10: walking values from the top, keep each value while the mass strictly above it is
 * below top_p (vLLM drops a token when the ascending cumulative sum up to it is <= 1 - top_p).
 * Tokens with equal values are kept or dropped together.
 */
export function applyTopP(z: Float32Array, keep: Uint8Array, topP: number): void {
  if (topP >= 1) return;
  const ids: number[] = [];
  for (let i = 0; i < z.length; i++) if (keep[i]) ids.push(i);
  ids.sort((a, b) => z[b] - z[a]);
  const max = z[ids[0]];
  let total = 0;
  for (const i of ids) total += Math.exp(z[i] - max);
  let above = 0;
  let j = 0;
  while (j < ids.length) {
    const value = z[ids[j]];
    let group = 0;
    let end = j;
    while (end < ids.length && z[ids[end]] === value) group += Math.exp(z[ids[end++]] - max);
    if (above / total >= topP) for (let d = j; d < end; d++) keep[ids[d]] = 0;
    above += group;
    j = end;
  }
}

/** Step 11 (and greedy step 6 with noise off): argmax of z + g over kept ids, ties to the lower id. */
export function drawToken(z: Float32Array, keep: Uint8Array, noise: ((token: number) => number) | null): { token: number; margin: number } {
  let best = -Infinity;
  let second = -Infinity;
  let token = -1;
  for (let i = 0; i < z.length; i++) {
    if (!keep[i]) continue;
    const s = noise ? Math.fround(z[i] + Math.fround(noise(i))) : z[i];
    if (s > best) {
      second = best;
      best = s;
      token = i;
    } else if (s > second) {
      second = s;
    }
  }
  if (token < 0) token = 0; // every id masked: torch.argmax over -inf returns 0
  return { token, margin: best - second };
}

/** The whole pipeline for one row. */
export function sampleRowReference(input: SampleRowInput): SampleRowResult {
  const p = input.params;
  const x = applyGrammar(input.logits, input.grammarBitmask);
  const lse = logSumExp(x);
  const z = processLogits(x, p, input.outputLen, input.promptTokens, input.outputTokens, input.bannedTokenIds);
  const keep = new Uint8Array(z.length);
  for (let i = 0; i < z.length; i++) keep[i] = z[i] === -Infinity ? 0 : 1;
  let noise: ((token: number) => number) | null = null;
  if (!p.greedy) {
    applyMinP(z, keep, p.minP);
    applyTopK(z, keep, p.topK);
    applyTopP(z, keep, p.topP);
    noise = (i) => gumbel(p.seedLo, p.seedHi, input.outputLen, i);
  }
  const { token, margin } = drawToken(z, keep, noise);
  const logprob = floorLogprob(x[token] - lse);
  const byRank = topByRank(x, lse, p.topLogprobs);
  const top = p.topByRank ? byRank : sampledFirst({ id: token, logprob }, byRank, p.topLogprobs);
  return { token, logprob, top, lse, processed: z, kept: keep, margin };
}
