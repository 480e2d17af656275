/**
 * The Engine's continuous batching on the bundled tiny Qwen2 model (SwiftShader in Node):
 * a request admitted while another decodes (both equal to their runs alone and to the reference's
 * greedy decoding), `n` choices sharing the prompt's blocks (and each equal to a lone run with its
 * seed), prefix-cache hits on a repeated prompt but not across cache salts, aborts and early exits
 * freeing their rows and blocks at once, many concurrent requests all completing, and waiting
 * requests admitted fairly across owners.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import { greedyDecode, type ReferenceModel } from '../../src/engine/reference/model';
import { collect, promptOf, referenceOf, request, testEngine, type Outcome } from './engine-helpers';

const MODEL = 'hearth/tiny-qwen2';
let engine: Engine;
let ref: ReferenceModel;
let V: number;

beforeAll(async () => {
  engine = await testEngine();
  const served = await engine.loadModel(MODEL);
  V = served.config.vocabSize;
  ref = (await referenceOf(MODEL)).ref;
});
afterAll(() => engine?.gpu.device.destroy());

const model = () => engine.models[0];
/** Blocks held by sequences (free and cached-unreferenced blocks are available). */
const blocksInUse = () => model().blocks.numBlocks - model().blocks.available;

describe('continuous batching', () => {
  it('admits a request while another decodes; both give the tokens of their lone runs and of the reference', async () => {
    const a = promptOf(21, V, 1);
    const b = promptOf(35, V, 2);
    const aloneA = await collect(engine.generate(request(MODEL, a, { maxTokens: 12 })), 1);
    const aloneB = await collect(engine.generate(request(MODEL, b, { maxTokens: 6 })), 1);
    expect(aloneA.tokens[0]).toEqual(greedyDecode(ref, a, 12));
    expect(aloneB.tokens[0]).toEqual(greedyDecode(ref, b, 6));

    // B is submitted when A has 3 tokens; A's token count when B's first token arrives shows they ran together.
    let second: Promise<Outcome> | null = null;
    let aTokensAtBFirst = -1;
    const first = await collect(engine.generate(request(MODEL, a, { maxTokens: 12 })), 1, (ev, outA) => {
      if (!second && outA.tokens[0].length === 3) {
        second = collect(engine.generate(request(MODEL, b, { maxTokens: 6 })), 1, (ev2, outB) => {
          if (aTokensAtBFirst < 0 && outB.tokens[0].length === 1) aTokensAtBFirst = outA.tokens[0].length;
        });
      }
    });
    const other = await second!;
    expect(first.tokens[0]).toEqual(aloneA.tokens[0]);
    expect(other.tokens[0]).toEqual(aloneB.tokens[0]);
    expect(aTokensAtBFirst).toBeGreaterThanOrEqual(3);
    expect(aTokensAtBFirst).toBeLessThan(12);
    // While the batch stayed the same, steps were submitted before the previous one was read back.
    expect(model().scheduler.stats.pipelinedSteps).toBeGreaterThan(0);
    expect(first.finish[0]).toEqual({ reason: 'length', stopTokenId: null, cumulativeLogprob: undefined });
  });

  it('n choices share the prompt blocks; each choice equals a lone run with its seed', async () => {
    const prompt = promptOf(40, V, 3); // 2 full blocks + 8 tokens
    const before = blocksInUse();
    let inUse = 0;
    const many = await collect(engine.generate(request(MODEL, prompt, { n: 3, temperature: 1, seed: 100, maxTokens: 5 })), 3, (ev, out) => {
      if (inUse === 0 && out.tokens.every((t) => t.length === 1)) inUse = blocksInUse() - before;
    });
    // Shared: 2 full blocks once + one partial block per choice (unshared would be 9).
    expect(inUse).toBe(2 + 3);
    for (let i = 0; i < 3; i++) {
      const alone = await collect(engine.generate(request(MODEL, prompt, { temperature: 1, seed: 100 + i, maxTokens: 5 })), 1);
      expect(many.tokens[i]).toEqual(alone.tokens[0]);
    }
    expect(new Set(many.tokens.map((t) => t.join(','))).size).toBeGreaterThan(1);
    expect(blocksInUse()).toBe(before);
  });

  it('a repeated prompt hits the prefix cache; another cache salt does not', async () => {
    const prompt = promptOf(50, V, 4); // 3 full blocks; the last token is always recomputed
    const cold = await collect(engine.generate(request(MODEL, prompt, { maxTokens: 4, cacheSalt: 'alice' })), 1);
    const warm = await collect(engine.generate(request(MODEL, prompt, { maxTokens: 4, cacheSalt: 'alice' })), 1);
    const salted = await collect(engine.generate(request(MODEL, prompt, { maxTokens: 4, cacheSalt: 'bob' })), 1);
    expect(cold.prefilled?.cachedTokens).toBe(0);
    expect(warm.prefilled?.cachedTokens).toBe(48);
    expect(salted.prefilled?.cachedTokens).toBe(0);
    expect(warm.tokens[0]).toEqual(cold.tokens[0]);
    expect(salted.tokens[0]).toEqual(cold.tokens[0]);
  });

  it('an abort and an early exit free their rows and blocks at once; the request beside them completes', async () => {
    const rows = model().blocks.rowsAvailable;
    const abort = new AbortController();
    const aborted = collect(engine.generate(request(MODEL, promptOf(30, V, 5), { maxTokens: 400, signal: abort.signal })), 1, (ev, out) => {
      if (out.tokens[0].length === 2) abort.abort();
    });
    const beside = collect(engine.generate(request(MODEL, promptOf(18, V, 6), { maxTokens: 10 })), 1);
    let left = 0;
    const handle = engine.generate(request(MODEL, promptOf(25, V, 7), { n: 2, temperature: 1, seed: 3, maxTokens: 400 }));
    for await (const ev of handle) {
      if (ev.type === 'tokens' && ++left === 3) break; // return(): the request ends
    }
    const a = await aborted;
    expect(a.tokens[0].length).toBeLessThan(10);
    expect(a.finish[0]?.reason).toBe('abort');
    const b = await beside;
    expect(b.tokens[0]).toEqual(greedyDecode(ref, promptOf(18, V, 6), 10));
    // The scheduler reaps between steps: give it one.
    await new Promise((r) => setTimeout(r, 50));
    expect(model().blocks.rowsAvailable).toBe(rows);
    expect(blocksInUse()).toBe(0);
  });

  it('50 concurrent requests, more than the 16 rows, all complete with their greedy tokens', async () => {
    const prompts = Array.from({ length: 50 }, (_, i) => promptOf(5 + (i % 13), V, 10 + i));
    const results = await Promise.all(prompts.map((p) => collect(engine.generate(request(MODEL, p, { maxTokens: 3 })), 1)));
    results.forEach((r, i) => {
      expect(r.finish[0]?.reason).toBe('length');
      expect(r.tokens[0]).toEqual(greedyDecode(ref, prompts[i], 3));
    });
  });

  it("admits a second owner's request ahead of the first owner's backlog (issue 26)", async () => {
    // Owner A fills the 16 rows and queues 16 more; owner B's one request, sent last, gets the
    // first row that frees (B holds none, A holds the rest), not a row after A's whole backlog.
    const rows = model().blocks.rowsAvailable;
    const finished: string[] = [];
    const run = (owner: string, i: number) =>
      collect(engine.generate(request(MODEL, promptOf(6, V, 200 + i), { maxTokens: 4, owner })), 1).then(() =>
        finished.push(`${owner}${i}`),
      );
    const backlog = Array.from({ length: 2 * rows }, (_, i) => run('A', i));
    await Promise.all([...backlog, run('B', 0)]);
    expect(finished.length).toBe(2 * rows + 1);
    // First come first served would admit B after all 32 of A's: it would finish among the last.
    expect(finished.indexOf('B0')).toBeLessThan(rows + 4);
  });
});
