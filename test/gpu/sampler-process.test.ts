// The sampler's processing stage (grammar, allowed, bans, min_tokens, bias, penalties,
// temperature) and the raw log-sum-exp, GPU against reference/sampler.ts over several steps, with
// the output counts updated on the GPU between steps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu } from '../../src/engine/gpu/device';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { createKernelContext, type KernelContext } from '../../src/engine/gpu/context';
import { readF32, readU32, uploadStorage } from '../../src/engine/gpu/buffers';
import { MASKED_LOGIT, Sampler, samplerWorkgroupSize, type SamplerWorkgroupSize } from '../../src/engine/kernels/sampler';
import { runSamplerStep } from '../../src/engine/kernels/sampler-step';
import type { SamplingParams } from '../../src/engine/sampling/sampling-params';
import type { SamplerStepRow } from '../../src/engine/sampling/sampler-row';
import { sampleRowReference } from '../../src/engine/reference/sampler';
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

function ids(rng: Rng, n: number, V: number): number[] {
  return Array.from({ length: n }, () => rng.int(V));
}

function randomGrammar(rng: Rng, V: number): Uint32Array {
  const words = new Uint32Array(Math.ceil(V / 32));
  for (let i = 0; i < words.length; i++) words[i] = Math.floor(rng.uniform() * 2 ** 32);
  return words;
}

/** GPU processed values with the MASKED sentinel read as -Infinity, like the reference. */
function unmask(row: Float32Array): Float32Array {
  return row.map((v) => (v <= MASKED_LOGIT ? -Infinity : v));
}

describe('sampler processing against the reference', () => {
  // V = 1003 also runs the workgroup size of real GPUs (256): same kernels, other digit widths.
  for (const [V, size] of [
    [1000, 'adapter'],
    [1003, 256],
  ] as const) {
    it(`V=${V}, workgroup ${size}: processed logits, raw lse and tokens over 4 steps, counts kept on the GPU`, async () => {
      const workgroupSize = size === 'adapter' ? wg : size;
      const rng = new Rng(V);
      const params: SamplingParams[] = [
        { temperature: 1, seed: 11 },
        { temperature: 0.7, seed: 12 },
        { temperature: 0, repetitionPenalty: 1.5 },
        { temperature: 1.2, seed: 13, allowedTokenIds: ids(rng, 50, V) },
        { temperature: 1, seed: 14, logitBias: { [rng.int(V)]: 5, [rng.int(V)]: -150, [rng.int(V)]: 150, [rng.int(V)]: -2.5 } },
        { temperature: 1, seed: 15, minTokens: 2, eosTokenIds: [V - 1], stopTokenIds: [7, 8] },
        { temperature: 0.9, seed: 16, repetitionPenalty: 1.3, frequencyPenalty: 0.5, presencePenalty: -0.4 },
        { temperature: 0.8, seed: 17, frequencyPenalty: 1, repetitionPenalty: 0.8 },
      ];
      const B = params.length;
      const sampler = new Sampler(kernels, { maxSeqs: B + 2, maxBatch: B, vocabSize: V, workgroupSize });
      const prompts = params.map(() => ids(rng, 20, V));
      // Slots are offset by 2 so slot and row indices differ.
      const resolved = params.map((p, b) => sampler.admit(b + 2, p, prompts[b]));
      const history: number[][] = params.map(() => []);
      let compared = 0;
      for (let step = 0; step < 4; step++) {
        // Peaked rows make penalties and bans change the winner, not only the numbers.
        const logits = rng.normals(B * V, 3);
        const rows: SamplerStepRow[] = params.map((_, b) => ({
          slot: b + 2,
          outputLen: step,
          bannedTokenIds: b === 4 || b === 5 ? ids(rng, 5, V) : undefined,
          grammarBitmask: b === 7 ? randomGrammar(rng, V) : undefined,
        }));
        const buffer = uploadStorage(device, logits, 'logits');
        const out = await runSamplerStep(kernels, sampler, buffer, rows);
        const processed = await readF32(device, sampler.processed, B * V);
        const info = await readF32(device, sampler.rowInfo, B * 4);
        buffer.destroy();
        for (let b = 0; b < B; b++) {
          const ref = sampleRowReference({
            logits: logits.subarray(b * V, (b + 1) * V),
            params: resolved[b],
            outputLen: step,
            promptTokens: prompts[b],
            outputTokens: history[b],
            bannedTokenIds: rows[b].bannedTokenIds,
            grammarBitmask: rows[b].grammarBitmask,
          });
          const label = `V=${V} step ${step} row ${b}`;
          expectClose(unmask(processed.subarray(b * V, (b + 1) * V)), ref.processed, { atol: 1e-5, rtol: 1e-5 }, `${label} processed`);
          expectClose([info[b * 4 + 1]], [ref.lse], { atol: 1e-4, rtol: 1e-5 }, `${label} lse`);
          expectClose([out[b].logprob], [ref.logprob], { atol: 1e-4, rtol: 1e-5 }, `${label} logprob`);
          if (ref.margin > 1e-3) {
            expect(out[b].token, label).toBe(ref.token);
            compared++;
          }
          history[b].push(out[b].token);
        }
      }
      // Near-ties may go either way; nearly every draw must still have been compared.
      expect(compared).toBeGreaterThanOrEqual(4 * B - 2);

      // The GPU counted every sampled token in its slot, with no upload from the CPU.
      const counts = await readU32(device, sampler.counts, (B + 2) * V);
      for (let b = 0; b < B; b++) {
        const want = new Uint32Array(V);
        for (const t of history[b]) want[t]++;
        expect(Array.from(counts.subarray((b + 2) * V, (b + 3) * V))).toEqual(Array.from(want));
      }
      sampler.destroy();
    });
  }

  it('admitting a slot again clears its counts and prompt bits', async () => {
    const V = 300;
    const sampler = new Sampler(kernels, { maxSeqs: 1, maxBatch: 1, vocabSize: V, workgroupSize: wg });
    const logits = new Float32Array(V).map((_, i) => (i === 5 ? 4 : i === 6 ? 3.5 : 0));
    const buffer = uploadStorage(device, logits, 'logits');
    // A strong frequency penalty after two draws of token 5 moves the greedy choice to 6.
    sampler.admit(0, { temperature: 0, frequencyPenalty: 2 }, [1]);
    const first = await runSamplerStep(kernels, sampler, buffer, [{ slot: 0, outputLen: 0 }]);
    const second = await runSamplerStep(kernels, sampler, buffer, [{ slot: 0, outputLen: 1 }]);
    expect([first[0].token, second[0].token]).toEqual([5, 6]);
    sampler.admit(0, { temperature: 0, frequencyPenalty: 2 }, [1]);
    const fresh = await runSamplerStep(kernels, sampler, buffer, [{ slot: 0, outputLen: 0 }]);
    expect(fresh[0].token).toBe(5);
    buffer.destroy();
    sampler.destroy();
  });
});
