// The reference sampler and logprobs checked by hand on small cases (vLLM's formulas and order),
// and statistically: the noise hash is uniform and the Gumbel-max draw follows softmax.
import { describe, expect, it } from 'vitest';
import { resolveSampling, type SamplingParams } from '../../../src/engine/sampling/sampling-params';
import {
  applyGrammar,
  applyMinP,
  applyTopK,
  applyTopP,
  drawToken,
  processLogits,
  sampleRowReference,
} from '../../../src/engine/reference/sampler';
import { gumbel, noiseBits, noiseUniform, pcg4d } from '../../../src/engine/reference/sampler-noise';
import { floorLogprob, logSumExp, promptLogprobsReference, rankOf, sampledFirst, topByRank } from '../../../src/engine/reference/logprobs';

const resolve = (p: SamplingParams, V = 8) => resolveSampling({ seed: 1, ...p }, V);
const all = (n: number) => new Uint8Array(n).fill(1);

describe('reference processing (vLLM order and formulas)', () => {
  it('repetition over prompt and output, frequency and presence over output', () => {
    const x = Float32Array.from([2, -1, 0.5, 3]);
    const p = resolve({ repetitionPenalty: 2, frequencyPenalty: 0.5, presencePenalty: 0.25 }, 4);
    const z = processLogits(x, p, 3, [0], [1, 1, 3]);
    // 0: prompt, positive: 2 / 2. 1: output twice, negative: -1 * 2 - 0.5 * 2 - 0.25.
    // 2: unseen. 3: output once, positive: 3 / 2 - 0.5 - 0.25.
    expect(Array.from(z)).toEqual([1, -3.25, 0.5, 0.75]);
  });

  it('masks (grammar, allowed, bans, min_tokens stop ids), bias, then temperature', () => {
    const x = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const grammar = Uint32Array.of(0b11111110); // id 0 disallowed
    const p = resolve({
      temperature: 2,
      allowedTokenIds: [0, 1, 2, 3, 4, 5, 6],
      logitBias: { 1: 150, 2: -0.5 },
      minTokens: 2,
      eosTokenIds: [6],
      stopTokenIds: [5],
    });
    const masked = applyGrammar(x, grammar);
    expect(masked[0]).toBe(-Infinity);
    const early = processLogits(masked, p, 1, [], [], [3]);
    // 0 grammar, 3 banned, 5 and 6 stop ids (output 1 < min_tokens 2), 7 not allowed.
    expect(Array.from(early)).toEqual([-Infinity, (2 + 100) / 2, (3 - 0.5) / 2, -Infinity, 5 / 2, -Infinity, -Infinity, -Infinity]);
    const later = processLogits(masked, p, 2, [], []);
    expect(Array.from(later).slice(3)).toEqual([2, 2.5, 3, 3.5, -Infinity]);
    // The raw log-sum-exp sees the grammar mask and nothing else.
    expect(logSumExp(masked)).toBeCloseTo(Math.log([2, 3, 4, 5, 6, 7, 8].reduce((a, v) => a + Math.exp(v), 0)), 12);
  });

  it('greedy rows skip the temperature; temperature 0 is greedy, (0, 0.01) is raised to 0.01', () => {
    const x = Float32Array.from([1, 3, 2]);
    expect(Array.from(processLogits(x, resolve({ temperature: 0 }, 3), 0, [], []))).toEqual([1, 3, 2]);
    expect(resolve({ temperature: 1e-6 }).greedy).toBe(false);
    expect(resolve({ temperature: 1e-6 }).temperature).toBeCloseTo(0.01, 8);
  });

  it('min_p keeps p >= min_p * p_max', () => {
    const z = Float32Array.from([Math.log(4), Math.log(2), 0]); // p = 4/7, 2/7, 1/7
    const keep = all(3);
    applyMinP(z, keep, 0.4);
    expect(Array.from(keep)).toEqual([1, 1, 0]);
  });

  it('top_k keeps every value tied with the k-th', () => {
    const keep = all(5);
    applyTopK(Float32Array.from([3, 1, 2, 2, 0]), keep, 2);
    expect(Array.from(keep)).toEqual([1, 0, 1, 1, 0]);
  });

  it('top_p keeps the smallest top set whose mass reaches top_p', () => {
    const z = Float32Array.from([Math.log(0.3), Math.log(0.5), Math.log(0.2)]);
    for (const [p, want] of [
      [0.45, [0, 1, 0]],
      [0.55, [1, 1, 0]],
      [0.79, [1, 1, 0]],
      [0.85, [1, 1, 1]],
    ] as const) {
      const keep = all(3);
      applyTopP(z, keep, p);
      expect(Array.from(keep), `top_p ${p}`).toEqual(want);
    }
  });

  it('greedy ties go to the lower id; a draw is the argmax of z + g over kept ids', () => {
    expect(drawToken(Float32Array.from([1, 5, 5, 2]), all(4), null)).toEqual({ token: 1, margin: 0 });
    const z = Float32Array.from([0, 0, 0, 0]);
    const keep = Uint8Array.from([1, 0, 1, 1]);
    const g = (i: number) => gumbel(9, 0, 4, i);
    const want = [0, 2, 3].reduce((best, i) => (g(i) > g(best) ? i : best), 0);
    expect(drawToken(z, keep, g).token).toBe(want);
  });

  it('sampling at temperature 1 follows softmax (chi-square over 20000 seeded draws)', () => {
    const logits = Float32Array.from([0.5, -1, 2, 0, 1, -0.5, 1.5, -2]);
    const p = Array.from(logits, Math.exp);
    const total = p.reduce((a, b) => a + b, 0);
    const n = 20000;
    const counts = new Array(8).fill(0);
    for (let s = 0; s < n; s++) {
      const params = resolveSampling({ seed: BigInt(s) * 7919n }, 8);
      counts[sampleRowReference({ logits, params, outputLen: 0, promptTokens: [], outputTokens: [] }).token]++;
    }
    const chi = counts.reduce((a, c, i) => a + (c - (n * p[i]) / total) ** 2 / ((n * p[i]) / total), 0);
    expect(chi).toBeLessThan(24.3); // chi-square, 7 degrees of freedom, 0.001 tail
  });
});

describe('noise hash', () => {
  it('is deterministic, and u lies strictly inside (0, 1)', () => {
    expect(noiseBits(1, 2, 3, 4)).toBe(noiseBits(1, 2, 3, 4));
    expect(pcg4d(1, 2, 3, 4)).toEqual(pcg4d(1, 2, 3, 4));
    expect(noiseUniform(0)).toBeGreaterThan(0);
    expect(noiseUniform(0xffffffff)).toBeLessThan(1);
    expect(Math.fround(noiseUniform(0xffffffff))).toBe(noiseUniform(0xffffffff));
  });

  it('is uniform over tokens and independent across neighbouring seeds and steps', () => {
    const bins = 16;
    const n = 64000;
    const byToken = new Array(bins).fill(0);
    const joint = new Array(bins * bins).fill(0);
    for (let i = 0; i < n; i++) {
      byToken[Math.floor(noiseUniform(noiseBits(42, 0, 0, i)) * bins)]++;
      // Seed s and s + 1 (the seeds of n choices), and step t and t + 1, must not correlate.
      const a = Math.floor(noiseUniform(noiseBits(i, 0, 7, 3)) * 4);
      const b = Math.floor(noiseUniform(noiseBits(i + 1, 0, 7, 3)) * 4);
      const c = Math.floor(noiseUniform(noiseBits(5, 0, i, 3)) * 4);
      const d = Math.floor(noiseUniform(noiseBits(5, 0, i + 1, 3)) * 4);
      joint[(a * 4 + b) * 16 + c * 4 + d]++;
    }
    const chi = (obs: number[]) => obs.reduce((s, o) => s + (o - n / obs.length) ** 2 / (n / obs.length), 0);
    expect(chi(byToken)).toBeLessThan(37.7); // df 15, 0.001 tail
    expect(chi(joint)).toBeLessThan(330.5); // df 255, 0.001 tail
  });
});

describe('reference logprobs', () => {
  it('floors at -9999 and ranks count tokens >= the token (itself included)', () => {
    expect(floorLogprob(-Infinity)).toBe(-9999);
    expect(floorLogprob(-3)).toBe(-3);
    const x = Float32Array.from([1, 3, 3, 0]);
    expect([rankOf(x, 1), rankOf(x, 2), rankOf(x, 0), rankOf(x, 3)]).toEqual([2, 2, 3, 4]);
  });

  it('top by rank breaks ties by id; vLLM order puts the sampled token first', () => {
    const x = Float32Array.from([1, 3, 3, 0, 2]);
    const lse = logSumExp(x);
    const top = topByRank(x, lse, 3);
    expect(top.map((e) => e.id)).toEqual([1, 2, 4]);
    const sampled = { id: 0, logprob: x[0] - lse };
    expect(sampledFirst(sampled, top, 3).map((e) => e.id)).toEqual([0, 1, 2]);
    expect(sampledFirst({ id: 2, logprob: top[1].logprob }, top, 3).map((e) => e.id)).toEqual([2, 1, 4]);
    expect(sampledFirst(sampled, top, 0)).toEqual([]);
  });

  it('prompt logprobs: logprob and rank of each next token plus the top-k', () => {
    const logits = Float32Array.from([0, Math.log(3), 0, /* row 2 */ 2, 2, 1]);
    const got = promptLogprobsReference(logits, [0, 2], 3, 1);
    expect(got[0].logprob).toBeCloseTo(Math.log(1 / 5), 6);
    expect(got[0].rank).toBe(3);
    expect(got[0].top.map((e) => e.id)).toEqual([1]);
    expect(got[1].rank).toBe(3);
    expect(got[1].top.map((e) => e.id)).toEqual([0]);
  });
});
