// The sampler's seeded draw: same seed same tokens, different seeds different tokens, greedy is the
// argmax, tokens match the reference, and draws follow softmax (chi-square over a fixed seed set,
// so the test is deterministic and cannot flake).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { uploadStorage } from '../../src/engine/gpu/buffers';
import { Sampler, samplerWorkgroupSize, type SamplerWorkgroupSize } from '../../src/engine/kernels/sampler';
import { runSamplerStep } from '../../src/engine/kernels/sampler-step';
import type { SamplingParams } from '../../src/engine/sampling/sampling-params';
import { sampleRowReference } from '../../src/engine/reference/sampler';
import { Rng } from '../../src/engine/tensor/random';

let device: GPUDevice;
let kernels: KernelContext;
/** The adapter's workgroup size (32 on SwiftShader); some cases also run the GPU size, 256. */
let wg: SamplerWorkgroupSize;

beforeAll(async () => {
  const ctx = await acquireGpu(await nodeGpu());
  device = ctx.device;
  kernels = createKernelContext(ctx);
  wg = samplerWorkgroupSize(ctx.description.adapter.isSoftware);
});
afterAll(() => device?.destroy());

/** B rows all reading the same logits row: tile it. */
function tile(row: Float32Array, B: number): Float32Array {
  const out = new Float32Array(B * row.length);
  for (let b = 0; b < B; b++) out.set(row, b * row.length);
  return out;
}

/** Draws `steps` tokens for each of `params` from fixed logits; returns tokens[row][step]. */
async function drawMany(V: number, logits: Float32Array, params: SamplingParams[], steps: number): Promise<number[][]> {
  const B = params.length;
  const sampler = new Sampler(kernels, { maxSeqs: B, maxBatch: B, vocabSize: V, workgroupSize: wg });
  params.forEach((p, b) => sampler.admit(b, p, []));
  const buffer = uploadStorage(device, logits, 'logits');
  const tokens: number[][] = params.map(() => []);
  for (let s = 0; s < steps; s++) {
    const out = await runSamplerStep(
      kernels,
      sampler,
      buffer,
      params.map((_, b) => ({ slot: b, outputLen: s, updateCounts: false })),
    );
    out.forEach((o, b) => tokens[b].push(o.token));
  }
  buffer.destroy();
  sampler.destroy();
  return tokens;
}

/** Upper chi-square quantile (Wilson-Hilferty), z = 3.09 for a 0.001 tail. */
function chiSquareCritical(df: number, z = 3.09): number {
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

/** Pearson's statistic of observed counts against probabilities p (sum 1) for n draws. */
function chiSquare(observed: number[], p: number[], n: number): number {
  let stat = 0;
  for (let i = 0; i < p.length; i++) {
    const e = p[i] * n;
    stat += (observed[i] - e) ** 2 / e;
  }
  return stat;
}

function softmax(x: ArrayLike<number>, T = 1): number[] {
  const max = Math.max(...Array.from(x));
  const e = Array.from(x, (v) => Math.exp((v - max) / T));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

describe('sampler draw', () => {
  it('tokens equal the reference over random rows and steps', async () => {
    const V = 1000;
    const B = 16;
    const rng = new Rng(3);
    const params: SamplingParams[] = Array.from({ length: B }, (_, b) => ({
      seed: 1000 + b,
      temperature: [0.3, 0.7, 1, 1.5][b % 4],
      topK: b % 3 === 0 ? 50 : 0,
      topP: b % 5 === 0 ? 0.9 : 1,
    }));
    const sampler = new Sampler(kernels, { maxSeqs: B, maxBatch: B, vocabSize: V, workgroupSize: wg });
    const resolved = params.map((p, b) => sampler.admit(b, p, []));
    let compared = 0;
    for (let s = 0; s < 3; s++) {
      const logits = rng.normals(B * V, 2);
      const buffer = uploadStorage(device, logits, 'logits');
      const out = await runSamplerStep(
        kernels,
        sampler,
        buffer,
        params.map((_, b) => ({ slot: b, outputLen: s })),
      );
      buffer.destroy();
      for (let b = 0; b < B; b++) {
        const ref = sampleRowReference({
          logits: logits.subarray(b * V, (b + 1) * V),
          params: resolved[b],
          outputLen: s,
          promptTokens: [],
          outputTokens: [],
        });
        if (ref.margin > 1e-3) {
          expect(out[b].token, `step ${s} row ${b}`).toBe(ref.token);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThanOrEqual(3 * B - 2);
    sampler.destroy();
  });

  it('the same seed gives the same tokens; different seeds give different tokens', async () => {
    const V = 1003;
    const row = new Rng(9).normals(V, 0.5); // flat: many tokens are plausible
    const params: SamplingParams[] = Array.from({ length: 16 }, (_, b) => ({ seed: BigInt(b), temperature: 1 }));
    // Rows 8..15 repeat the seeds of rows 0..7.
    for (let b = 8; b < 16; b++) params[b] = { ...params[b - 8] };
    const first = await drawMany(V, tile(row, 16), params, 6);
    const again = await drawMany(V, tile(row, 16), params, 6);
    expect(again).toEqual(first);
    for (let b = 8; b < 16; b++) expect(first[b]).toEqual(first[b - 8]);
    // Across seeds 0..7 (and across steps of one seed) the draws differ.
    const distinctAcrossSeeds = new Set(first.slice(0, 8).map((t) => t[0])).size;
    expect(distinctAcrossSeeds).toBeGreaterThanOrEqual(6);
    expect(new Set(first[0]).size).toBeGreaterThanOrEqual(4);
    // 64-bit seeds: the high word matters too.
    const high = await drawMany(V, tile(row, 2), [{ seed: 5n }, { seed: 5n + (1n << 32n) }], 6);
    expect(high[0]).not.toEqual(high[1]);
  });

  it('greedy (temperature 0) takes the argmax, the lower id on ties', async () => {
    const V = 1003;
    const B = 8;
    const rng = new Rng(21);
    const logits = rng.normals(B * V, 3);
    // Row 7: a tie for the maximum between ids 900 and 17.
    logits[7 * V + 900] = 50;
    logits[7 * V + 17] = 50;
    const tokens = await drawMany(
      V,
      logits,
      Array.from({ length: B }, () => ({ temperature: 0 })),
      2,
    );
    for (let b = 0; b < B; b++) {
      const row = logits.subarray(b * V, (b + 1) * V);
      let argmax = 0;
      for (let i = 1; i < V; i++) if (row[i] > row[argmax]) argmax = i;
      expect(tokens[b]).toEqual([argmax, argmax]);
    }
    expect(tokens[7][0]).toBe(17);
  });

  it('draws follow softmax(logits / T), also after top_k renormalisation (chi-square, fixed seeds)', async () => {
    const V = 64;
    const B = 64;
    const steps = 40;
    const n = B * steps;
    const row = new Rng(4).uniforms(V, -1, 1);
    const cases: { name: string; params: (b: number) => SamplingParams; p: number[] }[] = [
      { name: 'T=1', params: (b) => ({ seed: 5000 + b }), p: softmax(row) },
      { name: 'T=0.5', params: (b) => ({ seed: 9000 + b, temperature: 0.5 }), p: softmax(row, 0.5) },
    ];
    // top_k = 16 keeps the 16 largest logits; their softmax renormalised, the rest never drawn.
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => row[b] - row[a]);
    const top16 = new Set(order.slice(0, 16));
    const topP = softmax(order.slice(0, 16).map((i) => row[i]));
    const pTopK = Array.from({ length: V }, (_, i) => (top16.has(i) ? topP[order.indexOf(i)] : 0));
    cases.push({ name: 'top_k=16', params: (b) => ({ seed: 7000 + b, topK: 16 }), p: pTopK });
    for (const c of cases) {
      const tokens = (
        await drawMany(
          V,
          tile(row, B),
          Array.from({ length: B }, (_, b) => c.params(b)),
          steps,
        )
      ).flat();
      const observed = new Array(V).fill(0);
      for (const t of tokens) observed[t]++;
      const support = c.p.map((p, i) => [p, i] as const).filter(([p]) => p > 0);
      for (let i = 0; i < V; i++) if (c.p[i] === 0) expect(observed[i], `${c.name}: token ${i} is outside the support`).toBe(0);
      const stat = chiSquare(
        support.map(([, i]) => observed[i]),
        support.map(([p]) => p),
        n,
      );
      const critical = chiSquareCritical(support.length - 1);
      expect(stat, `${c.name}: chi-square ${stat.toFixed(1)} over ${support.length} tokens, critical ${critical.toFixed(1)}`).toBeLessThan(
        critical,
      );
    }
  });
});
