// The CPU backend's sampler fields: a chat request's sampling, after the engine's own vLLM
// normalisation, as llama.cpp's completion fields, with every llama.cpp default that vLLM does not
// share turned off, Hearth's sampler order, and the masks (allowed ids, min_tokens) as -inf biases.
import { describe, expect, it } from 'vitest';
import { llamaSampling, llamaSeed, SAMPLER_ORDER } from '../../../src/engine/cpu/llama-sampling';
import { resolveSampling, type SamplingParams } from '../../../src/engine/sampling/sampling-params';

const V = 50;
const map = (p: SamplingParams, phase: 'min-tokens' | 'free' = 'free', logprobs = false) =>
  llamaSampling(resolveSampling({ seed: 1, ...p }, V), { phase, vocabSize: V, contextLength: 2048, logprobs });

describe('llamaSampling', () => {
  it('maps the vLLM controls and neutralises llama.cpp defaults vLLM does not have', () => {
    const s = map({
      temperature: 0.7,
      topP: 0.9,
      topK: 5,
      minP: 0.05,
      repetitionPenalty: 1.2,
      presencePenalty: 0.5,
      frequencyPenalty: -0.25,
    });
    expect(s).toMatchObject({
      temperature: Math.fround(0.7),
      top_p: Math.fround(0.9),
      top_k: 5,
      min_p: Math.fround(0.05),
      repeat_penalty: Math.fround(1.2),
      presence_penalty: Math.fround(0.5),
      frequency_penalty: Math.fround(-0.25),
      repeat_last_n: 2048,
      typical_p: 1,
      dry_multiplier: 0,
      xtc_probability: 0,
      top_n_sigma: -1,
      mirostat: 0,
      n_probs: 0,
      post_sampling_probs: false,
    });
    expect(s.samplers).toEqual(['penalties', 'temperature', 'min_p', 'top_k', 'top_p']);
    expect(SAMPLER_ORDER).toEqual(s.samplers);
  });

  it('defaults to vLLM neutral values, not llama.cpp server defaults (0.8, 40, 0.95, 0.05)', () => {
    expect(map({})).toMatchObject({ temperature: 1, top_k: 0, top_p: 1, min_p: 0, repeat_penalty: 1 });
  });

  it('sends greedy as temperature 0, raises tiny temperatures as vLLM does, and disables top_k >= V', () => {
    expect(map({ temperature: 0 }).temperature).toBe(0);
    expect(map({ temperature: 0.001 }).temperature).toBe(Math.fround(0.01));
    expect(map({ topK: V + 10 }).top_k).toBe(0);
    expect(map({ topK: -1 }).top_k).toBe(0);
  });

  it('sends logit_bias clamped to [-100, 100], sorted by id, and allowed_token_ids as -inf on every other id', () => {
    expect(
      map({
        logitBias: new Map([
          [7, 250],
          [3, -1.5],
        ]),
      }).logit_bias,
    ).toEqual([
      [3, -1.5],
      [7, 100],
    ]);
    const allowed = map({ allowedTokenIds: [4, 2], logitBias: new Map([[2, 1]]) }).logit_bias;
    expect(allowed).toHaveLength(V - 1);
    expect(allowed.find(([id]) => id === 2)).toEqual([2, 1]);
    expect(allowed.some(([id]) => id === 4)).toBe(false);
    expect(allowed.filter(([, b]) => b === false)).toHaveLength(V - 2);
  });

  it('masks EOS and stop ids only in the min_tokens phase, and EOS not with ignore_eos', () => {
    const p: SamplingParams = { minTokens: 3, eosTokenIds: [0], stopTokenIds: [9] };
    expect(map(p, 'min-tokens').logit_bias).toEqual([
      [0, false],
      [9, false],
    ]);
    expect(map(p, 'free').logit_bias).toEqual([]);
    expect(map({ ...p, ignoreEos: true }, 'min-tokens').logit_bias).toEqual([[9, false]]);
  });

  it('asks for the distribution only when the response shows logprobs, at least the sampled token', () => {
    expect(map({ topLogprobs: 0 }, 'free', true).n_probs).toBe(1);
    expect(map({ topLogprobs: 5 }, 'free', true).n_probs).toBe(5);
    expect(map({ topLogprobs: 5 }, 'free', false).n_probs).toBe(0);
  });

  it('derives a u32 seed from the 64-bit one: seed and seed + 1 differ, and never llama.cpp "random"', () => {
    const a = map({ seed: 42n }).seed;
    expect(map({ seed: 42n }).seed).toBe(a);
    expect(map({ seed: 43n }).seed).not.toBe(a);
    expect(map({ seed: 42n + (1n << 32n) }).seed).not.toBe(a);
    expect(Number.isInteger(a) && a >= 0 && a < 2 ** 32).toBe(true);
    expect(llamaSeed(0xffffffff, 0)).not.toBe(0xffffffff);
  });
});
