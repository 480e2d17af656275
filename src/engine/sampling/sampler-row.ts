/**
 * The sampler's row format: one step's per-row struct (struct SampleRow in
 * kernels/sampler-common.wgsl) and token lists, packed from a ResolvedSampling. Pure functions, so
 * they are unit-tested without a GPU.
 * Not here: resolving a request's SamplingParams (sampling-params.ts), the kernels that read the
 * rows (kernels/sampler.ts).
 */
import type { ResolvedSampling } from './sampling-params';
import { SamplingParamsError, sortedUnique } from './sampling-params';

/** u32 words of one packed row (struct SampleRow in kernels/sampler-common.wgsl). */
export const ROW_WORDS = 16;

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

export interface RowPlacement {
  slot: number;
  outputLen: number;
  editOffset: number;
  banCount: number;
  hasGrammar: boolean;
  updateCounts: boolean;
}

/** Writes struct SampleRow (kernels/sampler-common.wgsl) at word `offset`. */
export function packRow(words: Uint32Array, offset: number, r: ResolvedSampling, at: RowPlacement): void {
  const f32 = new Float32Array(words.buffer, words.byteOffset, words.length);
  let flags = 0;
  if (r.greedy) flags |= RowFlag.greedy;
  if (r.allowedTokenIds) flags |= RowFlag.allowed;
  if (at.hasGrammar) flags |= RowFlag.grammar;
  if (hasPenalties(r)) flags |= RowFlag.penalties;
  if (at.updateCounts) flags |= RowFlag.updateCounts;
  if (r.topByRank) flags |= RowFlag.topByRank;
  words[offset + 0] = at.slot;
  words[offset + 1] = flags;
  f32[offset + 2] = r.temperature;
  f32[offset + 3] = r.topP;
  words[offset + 4] = r.topK;
  f32[offset + 5] = r.minP;
  f32[offset + 6] = r.repetitionPenalty;
  f32[offset + 7] = r.frequencyPenalty;
  f32[offset + 8] = r.presencePenalty;
  words[offset + 9] = r.seedLo;
  words[offset + 10] = r.seedHi;
  words[offset + 11] = at.outputLen;
  words[offset + 12] = r.topLogprobs;
  words[offset + 13] = at.editOffset;
  words[offset + 14] = r.logitBias.length;
  words[offset + 15] = at.banCount;
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
