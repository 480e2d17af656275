// One training step of the GPU trainer against the reference (reference/model-train.ts): the
// policy's logprobs, the loss and every LoRA gradient, for the three architectures, SFT and RL
// losses, several sequences of different lengths, one micro-batch or several, saved activations
// or recomputed ones.
import { afterAll, describe, expect, it } from 'vitest';
import type { Architecture, DType } from '../../src/engine/model/config';
import { expectClose } from '../../src/engine/reference/check';
import type { LoraModule } from '../../src/engine/reference/lora';
import { WeightSet } from '../../src/engine/model/weights';
import { ReferenceModel } from '../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import { planLora } from '../../src/engine/train/lora-plan';
import type { LossSpec } from '../../src/engine/train/types';
import { destroyContexts, kernelContext } from './dense-helpers';
import {
  loraConfig,
  maxAbs,
  nearPolicy,
  randomSequences,
  randomSession,
  referenceLogprobs,
  referenceStep,
  trainFixture,
} from './train-helpers';

afterAll(destroyContexts);

const ALL: LoraModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

const RL_PPO_SEQUENCE: LossSpec = {
  kind: 'rl',
  ppo: true,
  epsilon: 0.2,
  epsilonHigh: 0.3,
  importanceSamplingLevel: 'geometric_average',
  maskProbRatio: false,
  kimiK2Tau: null,
  maxNegativeAdvantageImportanceSamplingWeight: null,
};

const CASES: Array<{ arch: Architecture; dtype: DType; modules: LoraModule[]; lengths: number[] }> = [
  { arch: 'llama', dtype: 'bf16', modules: ALL, lengths: [21, 7, 34] },
  { arch: 'qwen2', dtype: 'f32', modules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'], lengths: [18, 33] },
  { arch: 'qwen3', dtype: 'f16', modules: ['k_proj', 'gate_proj', 'up_proj', 'o_proj'], lengths: [9, 26, 17] },
  // Phi-3: PEFT's fused modules (one A and B over q|k|v and over gate|up), partial rotary, LongRoPE
  // switching inside the 30-token sequence; SmolLM3: a NoPE layer.
  { arch: 'phi3', dtype: 'bf16', modules: ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'], lengths: [30, 11] },
  { arch: 'smollm3', dtype: 'f32', modules: ['q_proj', 'v_proj', 'up_proj'], lengths: [14, 9] },
];

describe('one training step against the reference', () => {
  for (const c of CASES) {
    it(`${c.arch} (${c.dtype}, LoRA on ${c.modules.join(' ')}): logprobs, SFT and RL losses and LoRA gradients`, async () => {
      const ctx = await kernelContext();
      const f = await trainFixture(ctx, c.arch, c.dtype, 71);
      const lora = loraConfig(c.modules);
      const plan = planLora(f.cfg, lora);
      const seqs = randomSequences(
        f.cfg.vocabSize,
        c.lengths,
        5,
        c.lengths.map((_, b) => b % 2),
      );

      const { session, adapter } = randomSession(f, lora, 13);
      const lp = await session.logprobs(seqs);
      const want = referenceLogprobs(f.ref, lora, adapter, seqs);
      expectClose(
        lp.flatMap((a) => Array.from(a)),
        want.flatMap((a) => Array.from(a)),
        { atol: 2e-3, rtol: 2e-3 },
        `${c.arch} logprobs`,
      );
      nearPolicy(seqs, want, 7);

      for (const loss of [{ kind: 'sft' } as LossSpec, RL_PPO_SEQUENCE]) {
        // A fresh session per loss: the step updates the adapter, the reference sees the initial one.
        const fresh = randomSession(f, lora, 13).session;
        const metrics = await fresh.step(seqs, loss, 1e-3);
        const ref = referenceStep(f.ref, plan, adapter, seqs, loss);
        expect(metrics.loss).toBeCloseTo(ref.loss, 2);
        const grads = await fresh.gradients();
        const scale = maxAbs(ref.grads);
        expect(scale).toBeGreaterThan(0);
        expectClose(grads, ref.grads, { atol: 2e-3 * scale, rtol: 2e-2 }, `${c.arch} ${loss.kind} LoRA gradients`);
        let sq = 0;
        for (const g of ref.grads) sq += g * g;
        expect(metrics.gradNorm).toBeCloseTo(Math.sqrt(sq), 2);
        expect(metrics.numTrainableTokens).toBe(seqs.reduce((s, q) => s + q.trainable.reduce((a, b) => a + b, 0), 0));
        fresh.dispose();
      }
      session.dispose();
      f.weights.destroy();
    });
  }
});

describe('a row-chunked embedding / lm_head (a real vocabulary over the binding limit)', () => {
  it('qwen2 with its tied embedding split in 3 chunks: logprobs and SFT gradients match the reference', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('qwen2');
    const tensors = randomModelTensors(cfg, 'bf16', 97);
    // 211 rows of 96 bf16: 80 rows per chunk.
    const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 256, chunkBytes: 80 * 96 * 2 });
    expect(weights.lmHead.chunks.length).toBe(3);
    const f = {
      cfg,
      weights,
      ref: new ReferenceModel(cfg, tensors),
      engine: new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {} }),
    };
    const lora = loraConfig(ALL);
    const seqs = randomSequences(cfg.vocabSize, [19, 30], 6);
    const { session, adapter } = randomSession(f, lora, 21);
    const want = referenceLogprobs(f.ref, lora, adapter, seqs);
    expectClose(
      (await session.logprobs(seqs)).flatMap((a) => Array.from(a)),
      want.flatMap((a) => Array.from(a)),
      { atol: 2e-3, rtol: 2e-3 },
      'chunked logprobs',
    );
    await session.step(seqs, { kind: 'sft' }, 1e-3);
    const ref = referenceStep(f.ref, planLora(cfg, lora), adapter, seqs, { kind: 'sft' });
    expectClose(await session.gradients(), ref.grads, { atol: 2e-3 * maxAbs(ref.grads), rtol: 2e-2 }, 'chunked SFT gradients');
    session.dispose();
    weights.destroy();
  });
});

describe('micro-batches and recomputation change nothing but the schedule', () => {
  it('three micro-batches and recomputed activations give the gradients of one saved micro-batch (SFT and RL)', async () => {
    const ctx = await kernelContext();
    const lora = loraConfig(ALL);
    const whole = await trainFixture(ctx, 'llama', 'f32', 83, { activationMode: 'save' });
    const split = await trainFixture(ctx, 'llama', 'f32', 83, { activationMode: 'recompute', microBatchTokens: 40 });
    const seqs = randomSequences(whole.cfg.vocabSize, [30, 12, 25, 9], 17, [0, 0, 1, 1]);
    const first = randomSession(whole, lora, 3).session;
    nearPolicy(seqs, await first.logprobs(seqs), 9);
    first.dispose();
    for (const loss of [{ kind: 'sft' } as LossSpec, RL_PPO_SEQUENCE]) {
      const a = randomSession(whole, lora, 3).session;
      const b = randomSession(split, lora, 3).session;
      const ma = await a.step(seqs, loss, 1e-3);
      const mb = await b.step(seqs, loss, 1e-3);
      expect(mb.loss).toBeCloseTo(ma.loss, 4);
      const ga = await a.gradients();
      expectClose(await b.gradients(), ga, { atol: 1e-4 * maxAbs(ga), rtol: 1e-3 }, `${loss.kind} gradients`);
      a.dispose();
      b.dispose();
    }
    whole.weights.destroy();
    split.weights.destroy();
  });
});
