// SamplingParams: vLLM's defaults and normalisation, refusals, and the packing the GPU reads
// (struct SampleRow, the sorted token lists, bitmasks).
import { describe, expect, it } from 'vitest';
import { SAMPLE_ROW, SAMPLE_ROW_BYTES, sampleRow, type RowPlacement } from '../../../src/engine/kernels/sampler-specs';
import { packStructs } from '../../../src/engine/kernels/spec';
import { RowFlag, bannedAtStep, editWords, packEdits, tokenBitmask } from '../../../src/engine/sampling/sampler-row';
import { SamplingParamsError, resolveSampling, splitSeed } from '../../../src/engine/sampling/sampling-params';

const V = 1000;
/** struct SampleRow: 16 four-byte fields, as sampler-common.wgsl's passes read them. */
const ROW_WORDS = 16;

describe('resolveSampling', () => {
  it("applies vLLM's defaults", () => {
    const r = resolveSampling({ seed: 3 }, V);
    expect(r).toMatchObject({
      greedy: false,
      temperature: 1,
      topP: 1,
      topK: 0,
      minP: 0,
      repetitionPenalty: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
    });
    expect(r).toMatchObject({ minTokens: 0, topLogprobs: 0, topByRank: false, allowedTokenIds: null, logitBias: [] });
  });

  it('temperature 0 is greedy and neutralises top_p, top_k, min_p', () => {
    const r = resolveSampling({ temperature: 0, topP: 0.5, topK: 3, minP: 0.2 }, V);
    expect(r).toMatchObject({ greedy: true, temperature: 1, topP: 1, topK: 0, minP: 0 });
  });

  it('top_k 0, -1 and >= vocab size all disable top_k', () => {
    for (const k of [0, -1, V, V + 5]) expect(resolveSampling({ topK: k }, V).topK).toBe(0);
    expect(resolveSampling({ topK: V - 1 }, V).topK).toBe(V - 1);
  });

  it('clamps logit_bias to [-100, 100] and sorts it by id; accepts a map or an object', () => {
    const r = resolveSampling({ logitBias: { 9: 300, 2: -1000, 5: 1.5 } }, V);
    expect(r.logitBias).toEqual([
      [2, -100],
      [5, 1.5],
      [9, 100],
    ]);
    expect(resolveSampling({ logitBias: new Map([[4, -7]]) }, V).logitBias).toEqual([[4, -7]]);
  });

  it('stop ids for min_tokens: EOS and stop_token_ids, EOS left out with ignore_eos', () => {
    expect(Array.from(resolveSampling({ eosTokenIds: [2, 9], stopTokenIds: [9, 4] }, V).minTokensStopIds)).toEqual([2, 4, 9]);
    expect(Array.from(resolveSampling({ eosTokenIds: [2], stopTokenIds: [4], ignoreEos: true }, V).minTokensStopIds)).toEqual([4]);
  });

  it('splits 64-bit seeds (negative ones wrap like int64) and draws a random seed when none is given', () => {
    expect(splitSeed(5)).toEqual({ seedLo: 5, seedHi: 0 });
    expect(splitSeed((7n << 32n) | 9n)).toEqual({ seedLo: 9, seedHi: 7 });
    expect(splitSeed(-1)).toEqual({ seedLo: 0xffffffff, seedHi: 0xffffffff });
    const a = resolveSampling({}, V);
    const b = resolveSampling({}, V);
    expect([a.seedLo, a.seedHi]).not.toEqual([b.seedLo, b.seedHi]);
  });

  it('refuses what the GPU cannot honour, with the parameter named', () => {
    const bad: [object, RegExp][] = [
      [{ temperature: -1 }, /temperature must be non-negative/],
      [{ topP: 0 }, /top_p must be in \(0, 1\]/],
      [{ topK: -2 }, /top_k must be 0 \(disable\)/],
      [{ minP: 1.5 }, /min_p must be in \[0, 1\]/],
      [{ repetitionPenalty: 0 }, /repetition_penalty must be greater than zero/],
      [{ frequencyPenalty: 3 }, /frequency_penalty must be in \[-2, 2\]/],
      [{ presencePenalty: -3 }, /presence_penalty must be in \[-2, 2\]/],
      [{ topLogprobs: 21 }, /top logprobs must be in \[0, 20\]/],
      [{ allowedTokenIds: [] }, /allowed_token_ids is not None and empty/],
      [{ allowedTokenIds: [V] }, /allowed_token_ids contains token id 1000/],
      [{ logitBias: { 5000: 1 } }, /logit_bias contains token id 5000/],
      [{ stopTokenIds: [-1] }, /stop_token_ids contains token id -1/],
    ];
    for (const [p, message] of bad) {
      expect(() => resolveSampling(p, V)).toThrow(SamplingParamsError);
      expect(() => resolveSampling(p, V)).toThrow(message);
    }
  });
});

describe('packing for the GPU', () => {
  it('bans stop ids only while the output is shorter than min_tokens, merged with bad-word bans', () => {
    const r = resolveSampling({ minTokens: 2, eosTokenIds: [7], stopTokenIds: [3] }, V);
    expect(Array.from(bannedAtStep(r, 1, [50, 3]))).toEqual([3, 7, 50]);
    expect(Array.from(bannedAtStep(r, 2, [50]))).toEqual([50]);
  });

  it('writes SampleRow field by field and the sorted token lists', () => {
    const r = resolveSampling(
      {
        temperature: 0.5,
        topP: 0.9,
        topK: 40,
        minP: 0.1,
        repetitionPenalty: 1.2,
        seed: (3n << 32n) | 4n,
        topLogprobs: 5,
        topLogprobsOrder: 'rank',
        allowedTokenIds: [1, 2],
        logitBias: { 8: 2.5, 1: -1 },
      },
      V,
    );
    const unused: RowPlacement = { slot: 0, outputLen: 0, editOffset: 0, banCount: 0, hasGrammar: false, updateCounts: false };
    const at: RowPlacement = { slot: 6, outputLen: 11, editOffset: 20, banCount: 2, hasGrammar: true, updateCounts: true };
    const words = new Uint32Array(packStructs(SAMPLE_ROW, [sampleRow(resolveSampling({}, V), unused), sampleRow(r, at)]));
    expect(words.length).toBe(2 * ROW_WORDS);
    const f = new Float32Array(words.buffer);
    const o = ROW_WORDS;
    expect(words[o]).toBe(6);
    expect(words[o + 1]).toBe(RowFlag.allowed | RowFlag.grammar | RowFlag.penalties | RowFlag.updateCounts | RowFlag.topByRank);
    expect([f[o + 2], f[o + 3], words[o + 4], f[o + 5], f[o + 6]]).toEqual([0.5, Math.fround(0.9), 40, Math.fround(0.1), Math.fround(1.2)]);
    expect([f[o + 7], f[o + 8], words[o + 9], words[o + 10], words[o + 11], words[o + 12]]).toEqual([0, 0, 4, 3, 11, 5]);
    expect([words[o + 13], words[o + 14], words[o + 15]]).toEqual([20, 2, 2]);
    expect([words[0], words[1], f[2], f[3]]).toEqual([0, 0, 1, 1]); // the first row: slot 0, no flags, temperature 1, top_p 1
    expect(SAMPLE_ROW_BYTES).toBe(4 * ROW_WORDS);

    const banned = Uint32Array.of(4, 9);
    const edits = new Uint32Array(3 + editWords(r, banned));
    packEdits(edits, 3, r, banned);
    const ef = new Float32Array(edits.buffer);
    expect([edits[3], ef[4], edits[5], ef[6], edits[7], edits[8]]).toEqual([1, -1, 8, 2.5, 4, 9]);
  });

  it('greedy rows carry the greedy flag and no penalty flag when penalties are neutral', () => {
    const row = sampleRow(resolveSampling({ temperature: 0 }, V), {
      slot: 0,
      outputLen: 0,
      editOffset: 0,
      banCount: 0,
      hasGrammar: false,
      updateCounts: false,
    });
    expect(row.flags).toBe(RowFlag.greedy);
  });

  it('token bitmasks have one bit per id, ceil(V/32) words, and refuse ids outside the vocabulary', () => {
    const m = tokenBitmask([0, 31, 32, 999], V);
    expect(m.length).toBe(32);
    expect([m[0], m[1], m[31]]).toEqual([(1 | (1 << 31)) >>> 0, 1, 1 << (999 - 992)]);
    expect(() => tokenBitmask([V], V)).toThrow(/outside \[0, 1000\)/);
  });
});
