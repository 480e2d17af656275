/**
 * Beam search through the Engine against a reference beam search over the reference model (the
 * bundled tiny Qwen3): vLLM's algorithm written out plainly below (top 2n raw-logprob candidates
 * per beam, EOS candidates completing, best n by cumulative logprob / length^length_penalty with
 * the prompt counted, the final ranking over completed and live beams). The best beams' tokens must
 * be identical and their cumulative logprobs close (|d| <= 2e-3: GPU f32 logits vs f64 reference).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import { logSumExp } from '../../src/engine/reference/logprobs';
import type { ReferenceModel } from '../../src/engine/reference/model';
import { collect, promptOf, referenceOf, request, testEngine } from './engine-helpers';

const MODEL = 'hearth/tiny-qwen3';
let engine: Engine;
let ref: ReferenceModel;
let V: number;

beforeAll(async () => {
  engine = await testEngine();
  V = (await engine.loadModel(MODEL)).config.vocabSize;
  ref = (await referenceOf(MODEL)).ref;
});
afterAll(() => engine?.gpu.device.destroy());

interface RefBeam {
  tokens: number[];
  cum: number;
  done: boolean;
}

/** Raw logprobs of the next token after `tokens`. */
function nextLogprobs(tokens: number[]): Float64Array {
  const logits = ref.forward(tokens).subarray((tokens.length - 1) * V);
  const lse = logSumExp(logits);
  return Float64Array.from(logits, (x) => x - lse);
}

function referenceBeamSearch(prompt: number[], width: number, maxTokens: number, eos: Set<number>, lengthPenalty: number): RefBeam[] {
  const score = (b: RefBeam) => b.cum / (prompt.length + b.tokens.length - (b.done ? 1 : 0)) ** lengthPenalty;
  let live: RefBeam[] = [{ tokens: [], cum: 0, done: false }];
  const completed: RefBeam[] = [];
  for (let step = 0; step < maxTokens && live.length > 0; step++) {
    const extended: RefBeam[] = [];
    for (const beam of live) {
      const lp = nextLogprobs([...prompt, ...beam.tokens]);
      const order = Array.from(lp.keys())
        .sort((a, b) => lp[b] - lp[a] || a - b)
        .slice(0, 2 * width);
      for (const id of order) {
        const next = { tokens: [...beam.tokens, id], cum: beam.cum + lp[id], done: eos.has(id) };
        (next.done ? completed : extended).push(next);
      }
    }
    live = extended.sort((a, b) => score(b) - score(a)).slice(0, width);
  }
  return [...completed, ...live].sort((a, b) => score(b) - score(a)).slice(0, width);
}

describe('beam search', () => {
  for (const [width, lengthPenalty] of [
    [3, 1],
    [2, 0.5],
  ] as const) {
    it(`width ${width}, length_penalty ${lengthPenalty}: the best beams of the reference beam search`, async () => {
      const prompt = promptOf(19, V, width);
      // An EOS id the model proposes early, so some beams complete before max_tokens.
      const lp = nextLogprobs(prompt);
      const eosId = Array.from(lp.keys()).sort((a, b) => lp[b] - lp[a])[3];
      const eos = new Set([eosId]);
      const want = referenceBeamSearch(prompt, width, 5, eos, lengthPenalty);
      const req = request(MODEL, prompt, { n: width, maxTokens: 5, beamSearch: { lengthPenalty } });
      req.sampling = req.sampling.map((s) => ({ ...s, eosTokenIds: [eosId] }));
      const got = await collect(engine.generate(req), width);
      expect(got.tokens).toEqual(want.map((b) => b.tokens));
      want.forEach((b, i) => {
        expect(got.finish[i]?.reason).toBe(b.done ? 'stop' : 'length');
        expect(Math.abs(got.finish[i]!.cumulativeLogprob! - b.cum)).toBeLessThanOrEqual(2e-3);
      });
      expect(engine.models[0].blocks.numBlocks - engine.models[0].blocks.available).toBe(0);
    });
  }
});
