// The sampler's min_p / top_k / top_p thresholds (radix select on the GPU) against the reference's
// sorting implementation of vLLM's semantics, on small odd vocabularies and on the real 151936.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { readF32, readU32, uploadStorage } from '../../src/engine/gpu/buffers';
import { Sampler, orderKey, samplerWorkgroupSize, type SamplerWorkgroupSize } from '../../src/engine/kernels/sampler';
import { runSamplerStep } from '../../src/engine/kernels/sampler-step';
import type { ResolvedSampling, SamplingParams } from '../../src/engine/sampling/sampling-params';
import { sampleRowReference, type SampleRowResult } from '../../src/engine/reference/sampler';
import { expectClose } from '../../src/engine/reference/check';
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

interface RowCheck {
  ref: SampleRowResult;
  gpuKept: Uint8Array;
  token: number;
  top: { id: number; logprob: number }[];
}

/** One step over `logits` with one row per params entry; the GPU kept set comes from the threshold. */
async function step(V: number, logits: Float32Array, params: SamplingParams[], workgroupSize = wg): Promise<RowCheck[]> {
  const B = params.length;
  const sampler = new Sampler(kernels, { maxSeqs: B, maxBatch: B, vocabSize: V, workgroupSize });
  const resolved: ResolvedSampling[] = params.map((p, b) => sampler.admit(b, p, []));
  const buffer = uploadStorage(device, logits, 'logits');
  const out = await runSamplerStep(
    kernels,
    sampler,
    buffer,
    params.map((_, b) => ({ slot: b, outputLen: 3 })),
  );
  const processed = await readF32(device, sampler.processed, B * V);
  const info = await readU32(device, sampler.rowInfo, B * 4);
  buffer.destroy();
  sampler.destroy();
  return params.map((_, b) => {
    const ref = sampleRowReference({
      logits: logits.subarray(b * V, (b + 1) * V),
      params: resolved[b],
      outputLen: 3,
      promptTokens: [],
      outputTokens: [],
    });
    const gpuKept = new Uint8Array(V);
    const threshold = info[b * 4 + 2];
    for (let i = 0; i < V; i++) gpuKept[i] = orderKey(processed[b * V + i]) >= threshold && processed[b * V + i] > -1e38 ? 1 : 0;
    return { ref, gpuKept, token: out[b].token, top: out[b].top };
  });
}

/**
 * The kept sets must be equal, except for a token whose processed logit sits within rounding of
 * the reference's boundary (the GPU sums masses in fixed point, the reference in f64).
 */
function expectSameKept(c: RowCheck, label: string): void {
  const z = c.ref.processed;
  let boundary = Infinity;
  for (let i = 0; i < z.length; i++) if (c.ref.kept[i]) boundary = Math.min(boundary, z[i]);
  const unexplained: string[] = [];
  let kept = 0;
  for (let i = 0; i < z.length; i++) {
    kept += c.ref.kept[i];
    if (c.gpuKept[i] !== c.ref.kept[i] && Math.abs(z[i] - boundary) > 1e-4 * Math.max(1, Math.abs(boundary))) {
      unexplained.push(`id ${i} z=${z[i]} gpu ${c.gpuKept[i]} ref ${c.ref.kept[i]}`);
    }
  }
  expect(unexplained, `${label}: kept ${kept} tokens, boundary ${boundary}`).toEqual([]);
}

describe('sampler thresholds against the reference', () => {
  // V = 1003 also runs the workgroup size of real GPUs (256): 8-bit radix digits instead of 5.
  // V = 8011 has enough chunks (>= k) for the pruning bound and the candidate list to engage.
  for (const [V, size] of [
    [1000, 'adapter'],
    [1003, 256],
    [8011, 'adapter'],
  ] as const) {
    it(`V=${V}, workgroup ${size}: min_p, top_k, top_p alone and combined`, async () => {
      const rng = new Rng(100 + V);
      const params: SamplingParams[] = [
        { minP: 0.1, seed: 1 },
        { minP: 0.9, seed: 2, temperature: 0.5 },
        { topK: 1, seed: 3 },
        { topK: 7, seed: 4 },
        { topK: 300, seed: 5, temperature: 1.5 },
        { topP: 0.5, seed: 6 },
        { topP: 0.95, seed: 7, temperature: 2 },
        { topP: 0.999, seed: 8 },
        { topK: 50, topP: 0.8, seed: 9, temperature: 0.7 },
        { minP: 0.05, topK: 20, topP: 0.9, seed: 10 },
        { minP: 0.3, topK: 500, seed: 11 },
        { topK: 40, seed: 12, allowedTokenIds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
      ];
      // Rows of different shapes: flat (top_p keeps hundreds), peaked, and a few large logits.
      const logits = new Float32Array(params.length * V);
      for (let b = 0; b < params.length; b++) {
        const scale = [0.5, 2, 4][b % 3];
        logits.set(rng.normals(V, scale), b * V);
        if (b % 4 === 1) for (let j = 0; j < 5; j++) logits[b * V + rng.int(V)] += 8;
      }
      const checks = await step(V, logits, params, size === 'adapter' ? wg : size);
      checks.forEach((c, b) => {
        expectSameKept(c, `row ${b} ${JSON.stringify(params[b])}`);
        expect(c.gpuKept[c.token], `row ${b}: the drawn token is among the kept`).toBe(1);
        if (c.ref.margin > 1e-3) expect(c.token, `row ${b} token`).toBe(c.ref.token);
      });
    });
  }

  it('top_k keeps every token tied with the k-th value; top_p keeps ties together', async () => {
    const V = 1001;
    const rng = new Rng(5);
    // Logits on a coarse grid: many exact ties at every rank.
    const row = new Float32Array(V).map(() => Math.round(rng.normal() * 4) / 2);
    const logits = new Float32Array(3 * V);
    for (let b = 0; b < 3; b++) logits.set(row, b * V);
    const checks = await step(V, logits, [
      { topK: 10, seed: 1 },
      { topK: 100, seed: 2 },
      { topP: 0.6, seed: 3 },
    ]);
    checks.forEach((c, b) => {
      expectSameKept(c, `tie row ${b}`);
      const kept = c.gpuKept.reduce((a, v) => a + v, 0);
      if (b < 2) expect(kept, 'ties widen the top-k set').toBeGreaterThan([10, 100][b]);
    });
  });

  it('V=151936 (Qwen vocabulary): thresholds, token and 20 top logprobs at B=3', async () => {
    const V = 151936;
    const rng = new Rng(151936);
    const logits = new Float32Array(3 * V);
    // Row 0: an LLM-like row, a few strong candidates over a broad tail. Row 1: nearly flat, so
    // top_p has to sum mass over most of the vocabulary. Row 2: row 0 with top_k alone, whose
    // pruning bound (the 20th chunk max) is the 20th value itself here.
    logits.set(rng.normals(V, 2), 0);
    for (let j = 0; j < 30; j++) logits[rng.int(V)] += 6 + 4 * rng.uniform();
    logits.set(rng.normals(V, 0.3), V);
    logits.copyWithin(2 * V, 0, V);
    const params: SamplingParams[] = [
      { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.01, seed: 77, topLogprobs: 20 },
      { temperature: 1, topP: 0.9, seed: 78, topLogprobs: 20, topLogprobsOrder: 'rank' },
      { topK: 20, seed: 79, topLogprobs: 20, topLogprobsOrder: 'rank' },
    ];
    const checks = await step(V, logits, params);
    checks.forEach((c, b) => {
      expectSameKept(c, `V=151936 row ${b}`);
      if (c.ref.margin > 1e-3) expect(c.token, `row ${b} token`).toBe(c.ref.token);
      expect(c.top.map((e) => e.id)).toEqual(c.ref.top.map((e) => e.id));
      expectClose(
        c.top.map((e) => e.logprob),
        c.ref.top.map((e) => e.logprob),
        { atol: 1e-4, rtol: 1e-5 },
        `row ${b} top logprobs`,
      );
    });
    expect(
      checks[1].gpuKept.reduce((a, v) => a + v, 0),
      'flat row keeps most of the vocabulary',
    ).toBeGreaterThan(V / 2);
    expect(
      checks[2].gpuKept.reduce((a, v) => a + v, 0),
      'top_k = 20 keeps 20',
    ).toBe(20);
  });
});
