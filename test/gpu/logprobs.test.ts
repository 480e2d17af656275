// Logprobs on the GPU against a sort of the reference: the sampler's chosen-token logprob and top
// logprobs (vLLM's sampled-first order and plain rank order), ties, the -9999 floor, and the
// prompt-logprobs kernel (logprob and rank of the actual next token plus the top-k).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { createStorage, readBytes, uploadStorage } from '../../src/engine/gpu/buffers';
import { Sampler, samplerWorkgroupSize, type SamplerWorkgroupSize } from '../../src/engine/kernels/sampler';
import { runSamplerStep } from '../../src/engine/kernels/sampler-step';
import { PromptLogprobs, decodePromptLogprobs, promptLogprobsStride } from '../../src/engine/kernels/logprobs';
import type { SamplingParams } from '../../src/engine/sampling/sampling-params';
import {
  floorLogprob,
  logSumExp,
  promptLogprobsReference,
  sampledFirst,
  topByRank,
  type TokenLogprob,
} from '../../src/engine/reference/logprobs';
import { expectClose } from '../../src/engine/reference/check';
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

const TOL = { atol: 1e-4, rtol: 1e-5 };

function expectSameList(got: TokenLogprob[], want: TokenLogprob[], label: string): void {
  expect(
    got.map((e) => e.id),
    `${label} ids`,
  ).toEqual(want.map((e) => e.id));
  expectClose(
    got.map((e) => e.logprob),
    want.map((e) => e.logprob),
    TOL,
    `${label} logprobs`,
  );
}

async function sampleRows(V: number, logits: Float32Array, params: SamplingParams[]) {
  const B = params.length;
  const sampler = new Sampler(kernels, { maxSeqs: B, maxBatch: B, vocabSize: V, workgroupSize: wg });
  params.forEach((p, b) => sampler.admit(b, p, []));
  const buffer = uploadStorage(device, logits, 'logits');
  const out = await runSamplerStep(
    kernels,
    sampler,
    buffer,
    params.map((_, b) => ({ slot: b, outputLen: 0 })),
  );
  expect(sampler.outputBytes()).toBe(B * (params.some((p) => (p.topLogprobs ?? 0) > 0) ? 176 : 16));
  buffer.destroy();
  sampler.destroy();
  return out;
}

async function promptLogprobs(V: number, logits: Float32Array, targets: number[], k: number, workgroupSize = wg) {
  const T = targets.length;
  const kernel = new PromptLogprobs(kernels, workgroupSize);
  const logitsBuffer = uploadStorage(device, logits, 'logits');
  const targetBuffer = uploadStorage(device, Uint32Array.from(targets), 'targets');
  const bytes = T * promptLogprobsStride(k) * 4;
  const out = createStorage(device, bytes, 'prompt logprobs');
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  for (const c of kernel.encode({ out, logits: logitsBuffer, targets: targetBuffer, T, V, k })) c.record(pass, kernels);
  pass.end();
  device.queue.submit([encoder.finish()]);
  const result = decodePromptLogprobs(await readBytes(device, out, bytes), T, k);
  for (const b of [logitsBuffer, targetBuffer, out]) b.destroy();
  kernel.destroy();
  return result;
}

describe('sampler logprobs', () => {
  it('chosen-token logprob and top logprobs match a sort of the raw row, in both orders', async () => {
    const V = 1003;
    const rng = new Rng(8);
    const params: SamplingParams[] = [
      { temperature: 0, topLogprobs: 1 },
      { temperature: 0, topLogprobs: 20 },
      { seed: 1, temperature: 1.5, topLogprobs: 5 },
      { seed: 2, temperature: 3, topLogprobs: 20 },
      { seed: 3, temperature: 3, topLogprobs: 20, topLogprobsOrder: 'rank' },
      // Penalty and bias change the choice, never the returned (raw) logprobs.
      { temperature: 0, topLogprobs: 3, logitBias: { 500: 100 } },
      { seed: 4, topLogprobs: 0 },
    ];
    const logits = rng.normals(params.length * V, 2);
    const out = await sampleRows(V, logits, params);
    params.forEach((p, b) => {
      const x = logits.subarray(b * V, (b + 1) * V);
      const lse = logSumExp(x);
      const chosen = { id: out[b].token, logprob: floorLogprob(x[out[b].token] - lse) };
      expectClose([out[b].logprob], [chosen.logprob], TOL, `row ${b} chosen`);
      const k = p.topLogprobs ?? 0;
      const byRank = topByRank(x, lse, k);
      const want = p.topLogprobsOrder === 'rank' ? byRank : sampledFirst(chosen, byRank, k);
      expectSameList(out[b].top, want, `row ${b}`);
    });
    // Greedy with no bias: the sampled token is rank 1, so vLLM's list is the true top-k.
    expect(out[1].top[0].id).toBe(out[1].token);
    expect(out[5].token).toBe(500);
    expect(out[5].top[0].id).toBe(500);
    expect(out[6].top).toEqual([]);
  });

  it('ties at the k-th value go to the lower ids; masked tokens floor at -9999', async () => {
    const V = 700;
    const row = new Float32Array(V).fill(-3);
    for (const i of [650, 12, 300, 301, 5]) row[i] = 4; // five tied leaders
    row[99] = 6;
    // Only a very unlikely token is allowed: it is sampled with its true raw logprob, floored.
    const unlikely = new Float32Array(row);
    unlikely[42] = -20000;
    const logits = new Float32Array(2 * V);
    logits.set(row, 0);
    logits.set(unlikely, V);
    const out = await sampleRows(V, logits, [
      { temperature: 0, topLogprobs: 4, topLogprobsOrder: 'rank' },
      { temperature: 0, topLogprobs: 2, allowedTokenIds: [42] },
    ]);
    expect(out[0].top.map((e) => e.id)).toEqual([99, 5, 12, 300]);
    expect(out[1].token).toBe(42);
    expect(out[1].logprob).toBe(-9999);
    expect(out[1].top.map((e) => e.id)).toEqual([42, 99]);
  });
});

describe('sampler logprobs over the real vocabulary', () => {
  it('V=151936: ties inside the candidate list, and a flat row too large for it', async () => {
    const V = 151936;
    const rng = new Rng(77);
    const logits = rng.normals(2 * V, 2);
    // Row 0: 30 tokens tied for the lead; the top-20 are the 20 lowest ids among them.
    const tied = new Set<number>();
    while (tied.size < 30) tied.add(rng.int(V));
    for (const id of tied) logits[id] = 20;
    // Row 1: every logit equal, so every token clears any bound (the candidate list overflows).
    logits.fill(0.25, V, 2 * V);
    const out = await sampleRows(V, logits, [
      { temperature: 0, topLogprobs: 20, topLogprobsOrder: 'rank' },
      { seed: 5, topK: 3, topLogprobs: 20, topLogprobsOrder: 'rank' },
    ]);
    const lowest = [...tied].sort((a, b) => a - b).slice(0, 20);
    expect(out[0].top.map((e) => e.id)).toEqual(lowest);
    expect(out[0].token).toBe(lowest[0]);
    expect(out[1].top.map((e) => e.id)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expectClose(
      out[1].top.map((e) => e.logprob),
      new Array(20).fill(-Math.log(V)),
      TOL,
      'flat row logprobs',
    );
  });
});

describe('prompt logprobs kernel', () => {
  for (const [V, T, k, size] of [
    [1003, 9, 5, 'adapter'],
    [1003, 5, 20, 256],
    [513, 4, 0, 'adapter'],
  ] as const) {
    it(`V=${V}, T=${T}, k=${k}, workgroup ${size}: matches the reference`, async () => {
      const rng = new Rng(V + T + k);
      const logits = rng.normals(T * V, 2.5);
      const targets = Array.from({ length: T }, () => rng.int(V));
      const got = await promptLogprobs(V, logits, targets, k, size === 'adapter' ? wg : size);
      const want = promptLogprobsReference(logits, targets, V, k);
      for (let t = 0; t < T; t++) {
        expectClose([got[t].logprob], [want[t].logprob], TOL, `row ${t} logprob`);
        expect(got[t].rank, `row ${t} rank`).toBe(want[t].rank);
        expectSameList(got[t].top, want[t].top, `row ${t}`);
      }
    });
  }

  it('V=151936: ranks, floors and top-20 over the real vocabulary, with ties', async () => {
    const V = 151936;
    const rng = new Rng(42);
    const T = 3;
    const logits = rng.normals(T * V, 3);
    // Row 1: 30 tokens tied for the lead (the top-20 must be their 20 lowest ids).
    for (let j = 0; j < 30; j++) logits[V + rng.int(V)] = 25;
    // Row 2: the target is hopeless (logprob below -9999).
    const targets = [rng.int(V), rng.int(V), 17];
    logits[2 * V + 17] = -1e5;
    const got = await promptLogprobs(V, logits, targets, 20);
    const want = promptLogprobsReference(logits, targets, V, 20);
    for (let t = 0; t < T; t++) {
      expectClose([got[t].logprob], [want[t].logprob], TOL, `row ${t} logprob`);
      expect(got[t].rank, `row ${t} rank`).toBe(want[t].rank);
      expectSameList(got[t].top, want[t].top, `row ${t}`);
    }
    expect(got[2].logprob).toBe(-9999);
    expect(got[2].rank).toBe(V);
  });
});
