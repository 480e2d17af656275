// Each sampling parameter's observable effect on the GPU sampler: allowed ids, bad-word bans,
// logit_bias (and its clamp), min_tokens / ignore_eos, vLLM's penalty formulas, top_k = 1 and a
// tiny top_p acting as greedy, min_p, the grammar bitmask (before the raw logprobs, as in vLLM),
// and updateCounts = false.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { readF32, readU32, uploadStorage } from '../../src/engine/gpu/buffers';
import { Sampler, samplerWorkgroupSize, type SamplerRowOutput, type SamplerWorkgroupSize } from '../../src/engine/kernels/sampler';
import { runSamplerStep } from '../../src/engine/kernels/sampler-step';
import type { SamplerStepRow } from '../../src/engine/sampling/sampler-row';
import type { SamplingParams } from '../../src/engine/sampling/sampling-params';
import { logSumExp } from '../../src/engine/reference/logprobs';
import { Rng } from '../../src/engine/tensor/random';

let device: GPUDevice;
let kernels: KernelContext;
let wg: SamplerWorkgroupSize;

beforeAll(async () => {
  const ctx = await acquireGpu(await nodeGpu());
  device = ctx.device;
  kernels = createKernelContext(ctx);
  wg = samplerWorkgroupSize(ctx.description.adapter.isSoftware);
});
afterAll(() => device?.destroy());

interface Run {
  sampler: Sampler;
  /** One step for every admitted slot (row b = slot b); extra per-row fields merged in. */
  step(outputLen: number, extra?: Partial<SamplerStepRow>[]): Promise<SamplerRowOutput[]>;
  done(): void;
}

/** A sampler with one slot per params entry, all reading `row` (tiled over the batch). */
function setup(V: number, row: Float32Array, params: SamplingParams[], prompts: number[][] = []): Run {
  const B = params.length;
  const sampler = new Sampler(kernels, { maxSeqs: B, maxBatch: B, vocabSize: V, workgroupSize: wg });
  params.forEach((p, b) => sampler.admit(b, p, prompts[b] ?? []));
  const logits = new Float32Array(B * V);
  for (let b = 0; b < B; b++) logits.set(row, b * V);
  const buffer = uploadStorage(device, logits, 'logits');
  return {
    sampler,
    step: (outputLen, extra = []) =>
      runSamplerStep(
        kernels,
        sampler,
        buffer,
        params.map((_, b) => ({ slot: b, outputLen, ...extra[b] })),
      ),
    done: () => {
      buffer.destroy();
      sampler.destroy();
    },
  };
}

function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

const V = 517;

describe('sampling parameters on the GPU', () => {
  it('allowed_token_ids: only allowed ids are ever sampled, whatever the logits', async () => {
    const rng = new Rng(1);
    const allowed = [3, 99, 250, 516];
    const run = setup(
      V,
      rng.normals(V, 3),
      Array.from({ length: 8 }, (_, b) => ({ seed: b, temperature: 1.5, allowedTokenIds: allowed })),
    );
    const seen = new Set<number>();
    for (let s = 0; s < 6; s++) for (const o of await run.step(s)) seen.add(o.token);
    expect([...seen].every((t) => allowed.includes(t))).toBe(true);
    expect(seen.size).toBeGreaterThan(1);
    run.done();
  });

  it('bad-word bans: a banned id is never sampled, greedy falls to the next best', async () => {
    const rng = new Rng(2);
    const row = rng.normals(V, 1);
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => row[b] - row[a]);
    const banned = order.slice(0, 5);
    const params: SamplingParams[] = [{ temperature: 0 }, ...Array.from({ length: 7 }, (_, b) => ({ seed: b }))];
    const run = setup(V, row, params);
    for (let s = 0; s < 4; s++) {
      const out = await run.step(
        s,
        params.map(() => ({ bannedTokenIds: banned })),
      );
      expect(out[0].token).toBe(order[5]);
      for (const o of out) expect(banned).not.toContain(o.token);
    }
    // Without the ban the greedy row takes the argmax again: bans last one step.
    expect((await run.step(4))[0].token).toBe(order[0]);
    run.done();
  });

  it('logit_bias: +100 makes a low token win, -100 removes the winner, values beyond 100 are clamped', async () => {
    const rng = new Rng(3);
    const row = rng.normals(V, 1);
    const top = argmax(row);
    const low = argmax(row.map((v) => -v));
    const run = setup(V, row, [
      { temperature: 0, logitBias: { [low]: 100 } },
      { temperature: 0, logitBias: { [top]: -100 } },
      { temperature: 0, logitBias: { [low]: 150, [top]: -150 } },
    ]);
    const out = await run.step(0);
    expect(out[0].token).toBe(low);
    expect(out[1].token).not.toBe(top);
    expect(out[2].token).toBe(low);
    const processed = await readF32(device, run.sampler.processed, 3 * V);
    expect(processed[2 * V + low]).toBeCloseTo(row[low] + 100, 4);
    expect(processed[2 * V + top]).toBeCloseTo(row[top] - 100, 4);
    // The returned logprob stays the raw one: bias does not change it.
    expect(out[0].logprob).toBeCloseTo(row[low] - logSumExp(row), 4);
    run.done();
  });

  it('min_tokens masks EOS and stop ids while the output is shorter; ignore_eos drops EOS from them', async () => {
    const row = new Float32Array(V);
    const eos = 7;
    const stop = 9;
    row[eos] = 10;
    row[stop] = 9;
    row[42] = 8;
    const run = setup(V, row, [
      { temperature: 0, minTokens: 3, eosTokenIds: [eos], stopTokenIds: [stop] },
      { temperature: 0, minTokens: 3, eosTokenIds: [eos], stopTokenIds: [stop], ignoreEos: true },
    ]);
    for (let s = 0; s < 3; s++) expect((await run.step(s)).map((o) => o.token)).toEqual([42, eos]);
    expect((await run.step(3)).map((o) => o.token)).toEqual([eos, eos]);
    run.done();
  });

  it("penalties follow vLLM's formulas: repetition over prompt and output, frequency and presence over output", async () => {
    const row = new Float32Array(V).map((_, i) => Math.sin(i) * 3);
    // Prompt tokens with negative logits (sin 10, sin 11 < 0: multiplied) and a positive one (divided).
    const inPrompt = [10, 11];
    const positive = 2;
    const params: SamplingParams = { temperature: 0, repetitionPenalty: 1.7, frequencyPenalty: 0.3, presencePenalty: 0.25 };
    const run = setup(V, row, [params], [[...inPrompt, positive]]);
    // Three greedy steps: each sampled token enters the output counts on the GPU.
    const tokens: number[] = [];
    for (let s = 0; s < 3; s++) tokens.push((await run.step(s))[0].token);
    // One more step; its processed logits show the penalties for the output so far.
    await run.step(3, [{ updateCounts: false }]);
    const z = await readF32(device, run.sampler.processed, V);
    const count = new Map<number, number>();
    for (const t of tokens) count.set(t, (count.get(t) ?? 0) + 1);
    for (let i = 0; i < V; i++) {
      const c = count.get(i) ?? 0;
      let want = row[i];
      if (c > 0 || inPrompt.includes(i) || i === positive) want = want > 0 ? want / 1.7 : want * 1.7;
      want -= 0.3 * c;
      if (c > 0) want -= 0.25;
      expect(z[i], `token ${i} (count ${c})`).toBeCloseTo(want, 4);
    }
    const counts = await readU32(device, run.sampler.counts, V);
    expect([...count].every(([t, c]) => counts[t] === c)).toBe(true);
    run.done();
  });

  it('top_k = 1 and a tiny top_p sample the argmax; min_p keeps only tokens near the top', async () => {
    const rng = new Rng(5);
    const row = rng.normals(V, 1);
    const best = argmax(row);
    const params: SamplingParams[] = [];
    for (let b = 0; b < 6; b++) params.push({ seed: 100 + b, topK: 1, temperature: 2 });
    for (let b = 0; b < 6; b++) params.push({ seed: 200 + b, topP: 1e-6, temperature: 2 });
    const run = setup(V, row, params);
    for (let s = 0; s < 3; s++) for (const o of await run.step(s)) expect(o.token).toBe(best);
    run.done();

    // min_p = 0.5: a token survives when p >= 0.5 * p_max, i.e. logit >= max - ln 2.
    const shaped = new Float32Array(V).fill(-5);
    shaped[10] = 3;
    shaped[20] = 3 - Math.log(1.5); // p = p_max / 1.5: kept
    shaped[30] = 3 - Math.log(3); // p = p_max / 3: dropped
    const minP = setup(
      V,
      shaped,
      Array.from({ length: 16 }, (_, b) => ({ seed: 300 + b, minP: 0.5 })),
    );
    const seen = new Set<number>();
    for (let s = 0; s < 3; s++) for (const o of await minP.step(s)) seen.add(o.token);
    expect([...seen].sort((a, b) => a - b)).toEqual([10, 20]);
    minP.done();
  });

  it('grammar bitmask: only allowed ids are sampled and raw logprobs are renormalised over them (vLLM)', async () => {
    const rng = new Rng(6);
    const row = rng.normals(V, 2);
    const W = Math.ceil(V / 32);
    const mask = new Int32Array(W);
    const allowed = [1, 64, 65, 300, 516];
    for (const id of allowed) mask[id >>> 5] |= 1 << (id & 31);
    const params: SamplingParams[] = Array.from({ length: 6 }, (_, b) => ({ seed: b, temperature: 2, topLogprobs: 7 }));
    const run = setup(V, row, params);
    const allowedRow = row.map((v, i) => (allowed.includes(i) ? v : -Infinity));
    const lse = logSumExp(allowedRow);
    for (let s = 0; s < 3; s++) {
      const out = await run.step(
        s,
        params.map(() => ({ grammarBitmask: mask })),
      );
      for (const o of out) {
        expect(allowed).toContain(o.token);
        expect(o.logprob).toBeCloseTo(row[o.token] - lse, 4);
        // Five allowed ids with real logprobs, then masked ids at the -9999 floor.
        expect(
          o.top
            .slice(0, 5)
            .map((e) => e.id)
            .sort((a, b) => a - b),
        ).toEqual(allowed);
        expect(o.top.slice(5).map((e) => e.logprob)).toEqual([-9999, -9999]);
      }
    }
    // A step without the mask samples from the whole vocabulary again.
    const free = await run.step(3);
    expect(free.some((o) => !allowed.includes(o.token))).toBe(true);
    run.done();
  });

  it('one step is four dispatches and one submission, whatever B and the parameters', async () => {
    const rng = new Rng(9);
    for (const params of [
      [{ temperature: 0 }],
      Array.from({ length: 5 }, (_, b) => ({ seed: b, topK: 5, topP: 0.5, minP: 0.1, topLogprobs: 20 })),
    ]) {
      const run = setup(V, rng.normals(V, 1), params);
      kernels.profiler.reset();
      await run.step(0);
      expect(kernels.profiler.counts()).toEqual({
        dispatches: 4,
        submissions: 1,
        byLabel: { 'sampler.process': 1, 'sampler.select': 1, 'sampler.draw': 1, 'sampler.finish': 1 },
      });
      run.done();
    }
  });

  it('updateCounts = false leaves the penalty state untouched', async () => {
    const row = new Float32Array(V);
    row[4] = 5;
    const run = setup(V, row, [{ temperature: 0, frequencyPenalty: 1 }]);
    await run.step(0, [{ updateCounts: false }]);
    expect((await readU32(device, run.sampler.counts, V)).every((c) => c === 0)).toBe(true);
    await run.step(0);
    expect((await readU32(device, run.sampler.counts, V))[4]).toBe(1);
    run.done();
  });
});
