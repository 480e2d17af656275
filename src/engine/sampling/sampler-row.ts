/**
 * The sampler's row facts: a step row (SamplerStepRow), the flag bits of its packed struct, and
 * its token lists (bias pairs, banned ids, bitmasks) packed from a ResolvedSampling. Pure
 * functions, so they are unit-tested without a GPU.
 * Not here: resolving a request's SamplingParams (sampling-params.ts), the packed struct itself
 * (SAMPLE_ROW in kernels/sampler-specs.ts), the kernels that read the rows (kernels/sampler.ts).
 */
import type { ResolvedSampling } from './sampling-params';
import { SamplingParamsError, sortedUnique } from './sampling-params';

/** Bits of SampleRow.flags; the WGSL twins are the F_* constants in kernels/sampler-common.wgsl. */
export const RowFlag = {
  /** Argmax of the processed logits; temperature, min_p, top_k, top_p are skipped. */
  greedy: 1,
  /** The slot's allowed-token bitmask applies. */
  allowed: 2,
  /** This step's grammar bitmask row applies (before the raw logprobs, as in vLLM). */
  grammar: 4,
  /** Some penalty is not neutral: read the output counts and the prompt bitmask. */
  penalties: 8,
  /** Count the sampled token in the slot's output counts (off for rows whose token is discarded). */
  updateCounts: 16,
  /** Return the top logprobs by rank only (beam search), not vLLM's sampled-token-first order. */
  topByRank: 32,
} as const;

/** One row of one sampler step: which slot, how far it is, and this step's extra masks. */
export interface SamplerStepRow {
  /** The sequence slot given to `admit` (its penalty state and allowed mask). */
  slot: number;
  /** Tokens generated so far for this sequence: the noise counter and the min_tokens test. */
  outputLen: number;
  /** Ids banned this step by bad_words (the caller matches the output so far). */
  bannedTokenIds?: readonly number[];
  /** xgrammar's bitmask row for this step: ceil(V/32) words, bit set = allowed. */
  grammarBitmask?: Int32Array | Uint32Array;
  /** Default true; false leaves the output counts untouched (the token will be discarded). */
  updateCounts?: boolean;
}

/** True when some penalty changes logits (vLLM skips the whole step otherwise). */
export function hasPenalties(r: ResolvedSampling): boolean {
  return r.repetitionPenalty !== 1 || r.frequencyPenalty !== 0 || r.presencePenalty !== 0;
}

/** The ids masked at this step: bad-word bans, plus every stop id while output < min_tokens. */
export function bannedAtStep(r: ResolvedSampling, outputLen: number, bannedTokenIds: readonly number[] = []): Uint32Array {
  const ids = outputLen < r.minTokens ? [...bannedTokenIds, ...r.minTokensStopIds] : bannedTokenIds;
  return sortedUnique(ids);
}

/** Words that `packEdits` writes for this row: 2 per bias entry, 1 per banned id. */
export function editWords(r: ResolvedSampling, banned: Uint32Array): number {
  return 2 * r.logitBias.length + banned.length;
}

/**
 * Writes the row's token lists at `offset`: (id, f32 bias bits) pairs, then the banned ids, both
 * sorted by id (resolveSampling and bannedAtStep sort them): the GPU binary-searches them.
 */
export function packEdits(words: Uint32Array, offset: number, r: ResolvedSampling, banned: Uint32Array): void {
  const f32 = new Float32Array(1);
  const bits = new Uint32Array(f32.buffer);
  let o = offset;
  for (const [id, value] of r.logitBias) {
    f32[0] = value;
    words[o++] = id;
    words[o++] = bits[0];
  }
  words.set(banned, o);
}

/** One bit per token id, ceil(V/32) words (the layout of xgrammar's bitmask rows). */
export function tokenBitmask(ids: ArrayLike<number>, vocabSize: number): Uint32Array {
  const words = new Uint32Array(Math.ceil(vocabSize / 32));
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id < 0 || id >= vocabSize) throw new SamplingParamsError(`token id ${id} is outside [0, ${vocabSize}).`);
    words[id >>> 5] |= 1 << (id & 31);
  }
  return words;
}
