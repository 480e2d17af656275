/**
 * How the Engine ends and shapes choices (bundled tiny Qwen2, greedy, checked against the
 * reference's greedy continuation G): EOS and stop token ids end a choice with "stop" (the stop id
 * reported, EOS not), EOS is masked until min_tokens and ignored with ignore_eos, max_tokens and the
 * context length end with "length", bad words ban their last token after their prefix, prompt
 * logprobs match the reference, a grammar's bitmask steers every token and its end stops the
 * choice, and a KV cache too small for the batch preempts and recomputes sequences without
 * changing their tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import type { TokenConstraint } from '../../src/engine/generate/types';
import { promptLogprobsReference } from '../../src/engine/reference/logprobs';
import { greedyDecode, type ReferenceModel } from '../../src/engine/reference/model';
import { collect, promptOf, referenceOf, request, testEngine } from './engine-helpers';

const MODEL = 'hearth/tiny-qwen2';
let engine: Engine;
let ref: ReferenceModel;
let V: number;
const prompt = () => promptOf(20, V, 42);
let G: number[];

beforeAll(async () => {
  engine = await testEngine({ maxModelLen: 40 });
  V = (await engine.loadModel(MODEL)).config.vocabSize;
  ref = (await referenceOf(MODEL)).ref;
  G = greedyDecode(ref, prompt(), 12);
});
afterAll(() => engine?.gpu.device.destroy());

const run = (over: Parameters<typeof request>[2], n = 1) => collect(engine.generate(request(MODEL, prompt(), over)), n);
const withEos = (over: Parameters<typeof request>[2], eos: number[], extra: object = {}) => {
  const r = request(MODEL, prompt(), over);
  r.sampling = r.sampling.map((s) => ({ ...s, eosTokenIds: eos, ...extra }));
  return collect(engine.generate(r), r.n);
};

describe('finishing rules', () => {
  it('EOS and stop ids end with "stop"; min_tokens masks EOS; ignore_eos goes on to max_tokens', async () => {
    const stop = await run({ maxTokens: 12 });
    expect(stop.tokens[0]).toEqual(G);
    const eos = await withEos({ maxTokens: 12 }, [G[3]]);
    expect(eos.tokens[0]).toEqual(G.slice(0, G.indexOf(G[3]) + 1));
    expect(eos.finish[0]).toMatchObject({ reason: 'stop', stopTokenId: null });
    const stopId = await withEos({ maxTokens: 12 }, [], { stopTokenIds: [G[4]] });
    expect(stopId.tokens[0]).toEqual(G.slice(0, G.indexOf(G[4]) + 1));
    expect(stopId.finish[0]).toMatchObject({ reason: 'stop', stopTokenId: G[4] });
    const ignored = await withEos({ maxTokens: 6 }, [G[0]], { ignoreEos: true });
    expect(ignored.tokens[0]).toEqual(G.slice(0, 6));
    expect(ignored.finish[0]).toMatchObject({ reason: 'length' });
    const min = await withEos({ maxTokens: 4 }, [G[0]], { minTokens: 3 });
    expect(min.tokens[0].slice(0, 3)).not.toContain(G[0]);
    expect(min.tokens[0][0]).not.toBe(G[0]);
  });

  it('the context length ends a choice with "length" (max_model_len 40, prompt 20)', async () => {
    const long = await run({ maxTokens: 100 });
    expect(long.tokens[0]).toHaveLength(20);
    expect(long.finish[0]).toMatchObject({ reason: 'length' });
    expect(long.tokens[0].slice(0, 12)).toEqual(G);
  });

  it('bad words: a one-token word is always banned, a two-token word after its first token', async () => {
    const single = await run({ maxTokens: 3, badWords: [[G[0]]] });
    expect(single.tokens[0][0]).not.toBe(G[0]);
    const pair = await run({ maxTokens: 3, badWords: [[G[0], G[1]]] });
    expect(pair.tokens[0][0]).toBe(G[0]);
    expect(pair.tokens[0][1]).not.toBe(G[1]);
  });

  it('prompt logprobs of every position after the first, as the reference computes them', async () => {
    const got = await run({ maxTokens: 1, promptLogprobs: 2 });
    const P = prompt();
    const logits = ref.forward(P);
    const want = promptLogprobsReference(logits.subarray(0, (P.length - 1) * V), P.slice(1), V, 2);
    const pl = got.prefilled!.promptLogprobs!;
    expect(pl).toHaveLength(P.length);
    expect(pl[0]).toBeNull();
    want.forEach((w, i) => {
      const g = pl[i + 1]!;
      expect(g.tokenId).toBe(P[i + 1]);
      expect(g.logprob).toBeCloseTo(w.logprob, 2);
      expect(g.rank).toBe(w.rank);
      expect(g.top.map((t) => t.id)).toEqual(w.top.map((t) => t.id));
    });
  });

  it('a grammar bitmask steers each token, accepted tokens are fed back, its end stops the choice', async () => {
    // A grammar that allows exactly the sequence `want` (its own tokens, not the model's favourites).
    const want = [7, 99, 1234, 2];
    const accepted: number[] = [];
    const words = Math.ceil(V / 32);
    const constraint: TokenConstraint = {
      fillNextTokenBitmask(bitmask) {
        bitmask.fill(0);
        const next = want[accepted.length];
        bitmask[next >>> 5] |= 1 << (next & 31);
        expect(bitmask.length).toBe(words);
        return true;
      },
      acceptToken(id) {
        if (id !== want[accepted.length]) return false;
        accepted.push(id);
        return true;
      },
      isTerminated: () => accepted.length === want.length,
      dispose() {},
    };
    const got = await run({ maxTokens: 10, constraints: [constraint] });
    expect(got.tokens[0]).toEqual(want);
    expect(accepted).toEqual(want);
    expect(got.finish[0]).toMatchObject({ reason: 'stop', stopTokenId: null });
  });
});

describe('memory pressure', () => {
  it('a cache too small for the batch preempts sequences and recomputes them: tokens unchanged', async () => {
    // 12 blocks of 16 tokens; five sequences of about 20 + 24 tokens need 3 blocks each.
    const small = await testEngine({ kvCacheBytes: 12 * 2 * 2 * 2 * 16 * 16 * 4, maxModelLen: 48 });
    try {
      await small.loadModel(MODEL);
      const prompts = [promptOf(20, V, 1), promptOf(21, V, 2), promptOf(22, V, 3), promptOf(19, V, 4), promptOf(23, V, 5)];
      const runs = await Promise.all(prompts.map((p) => collect(small.generate(request(MODEL, p, { maxTokens: 24 })), 1)));
      expect(small.models[0].scheduler.stats.preemptions).toBeGreaterThan(0);
      runs.forEach((r, i) => expect(r.tokens[0]).toEqual(greedyDecode(ref, prompts[i], 24)));
    } finally {
      small.models[0]?.destroy();
    }
  });
});
