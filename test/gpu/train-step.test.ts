// One training step of the GPU trainer against the reference (reference/model-train.ts): the
// policy's logprobs, the loss and every LoRA gradient, for the three architectures, SFT and RL
// losses, several sequences of different lengths, one micro-batch or several, saved activations
// or recomputed ones; and a hybrid model whose local layer slides over 8 tokens (as Gemma 3's local
// and global layers) on sequences of 3x the window and more, where the full-attention reference differs;
// and a random-weight Mistral checkpoint from a Mistral-format config.json: LoRA SFT lowers its loss
// and the adapter exports under PEFT's Mistral names.
import { afterAll, describe, expect, it } from 'vitest';
import type { Architecture, ModelConfig } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { expectClose } from '../../src/engine/reference/check';
import type { LoraModule } from '../../src/engine/model/lora/peft-modules';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
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

/** A trainer over `cfg` with seeded random bf16 weights, and the reference of the same weights. */
async function fixtureOf(cfg: ModelConfig, seed: number, upload: Parameters<typeof WeightSet.upload>[3] = { ropePositions: 64 }) {
  const ctx = await kernelContext();
  const tensors = randomModelTensors(cfg, 'bf16', seed);
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, upload);
  const engine = new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {} });
  return { cfg, tensors, weights, ref: new ReferenceModel(cfg, tensors), engine };
}

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
    const cfg = testConfig('qwen2');
    // 211 rows of 96 bf16: 80 rows per chunk.
    const f = await fixtureOf(cfg, 97, { ropePositions: 256, chunkBytes: 80 * 96 * 2 });
    const weights = f.weights;
    expect(weights.lmHead.chunks.length).toBe(3);
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

describe('training with sliding-window layers', () => {
  it('a local (window 8) and a global layer: logprobs, SFT loss and LoRA gradients match the windowed reference', async () => {
    const cfg = testConfig('llama', { slidingWindow: 8, layerTypes: ['sliding_attention', 'full_attention'] });
    const f = await fixtureOf(cfg, 53);
    const lora = loraConfig(ALL);
    const seqs = randomSequences(cfg.vocabSize, [27, 40], 4);
    const { session, adapter } = randomSession(f, lora, 29);
    const got = (await session.logprobs(seqs)).flatMap((a) => Array.from(a));
    const want = referenceLogprobs(f.ref, lora, adapter, seqs).flatMap((a) => Array.from(a));
    expectClose(got, want, { atol: 2e-3, rtol: 2e-3 }, 'windowed logprobs');
    const fullRef = new ReferenceModel({ ...cfg, slidingWindow: null, layerTypes: ['full_attention', 'full_attention'] }, f.tensors);
    const full = referenceLogprobs(fullRef, lora, adapter, seqs).flatMap((a) => Array.from(a));
    // Position 0 has no logprob (NaN in both).
    expect(Math.max(...full.map((x, i) => (Number.isNaN(x) ? 0 : Math.abs(x - got[i]))))).toBeGreaterThan(1e-2);

    const metrics = await session.step(seqs, { kind: 'sft' }, 1e-3);
    const ref = referenceStep(f.ref, planLora(cfg, lora), adapter, seqs, { kind: 'sft' });
    expect(metrics.loss).toBeCloseTo(ref.loss, 2);
    const grads = await session.gradients();
    expectClose(grads, ref.grads, { atol: 2e-3 * maxAbs(ref.grads), rtol: 2e-2 }, 'windowed SFT LoRA gradients');
    session.dispose();
    f.weights.destroy();
  });
});

describe('a Mistral checkpoint (MistralForCausalLM config, random weights, sliding window 8)', () => {
  it('LoRA SFT lowers the loss, and the adapter exports with PEFT names and shapes for Mistral', async () => {
    // Mistral's config.json keys (as Mistral-7B-v0.1 / Nemo publish them), scaled down; head_dim
    // explicit and != hidden_size / num_attention_heads, as in Mistral-Nemo.
    const cfg = parseModelConfig({
      architectures: ['MistralForCausalLM'],
      attention_dropout: 0.0,
      bos_token_id: 1,
      eos_token_id: 2,
      head_dim: 24,
      hidden_act: 'silu',
      hidden_size: 96,
      initializer_range: 0.02,
      intermediate_size: 136,
      max_position_embeddings: 256,
      model_type: 'mistral',
      num_attention_heads: 6,
      num_hidden_layers: 2,
      num_key_value_heads: 2,
      rms_norm_eps: 1e-5,
      rope_theta: 1000000.0,
      sliding_window: 8,
      tie_word_embeddings: false,
      torch_dtype: 'bfloat16',
      use_cache: true,
      vocab_size: 211,
    });
    expect(cfg.layerTypes).toEqual(['sliding_attention', 'sliding_attention']);
    const f = await fixtureOf(cfg, 61);
    const rank = 4;
    const { session } = randomSession(f, loraConfig(ALL, rank), 5);
    const seqs = randomSequences(cfg.vocabSize, [26, 20], 8);
    const losses: number[] = [];
    for (let s = 0; s < 4; s++) losses.push((await session.step(seqs, { kind: 'sft' }, 2e-2)).loss);
    expect(losses[3], `losses ${losses.join(', ')}`).toBeLessThan(0.9 * losses[0]);

    // PEFT's keys for MistralForCausalLM (the Llama module names): lora_A [r, in], lora_B [out, r].
    const exported = await session.exportAdapter();
    const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F } = cfg;
    const shapes: Record<string, [number, number]> = {
      'self_attn.q_proj': [C, NH * HS],
      'self_attn.k_proj': [C, NKV * HS],
      'self_attn.v_proj': [C, NKV * HS],
      'self_attn.o_proj': [NH * HS, C],
      'mlp.gate_proj': [C, F],
      'mlp.up_proj': [C, F],
      'mlp.down_proj': [F, C],
    };
    const want = new Map<string, number[]>();
    for (let l = 0; l < cfg.numLayers; l++) {
      for (const [m, [inp, out]] of Object.entries(shapes)) {
        want.set(`base_model.model.model.layers.${l}.${m}.lora_A.weight`, [rank, inp]);
        want.set(`base_model.model.model.layers.${l}.${m}.lora_B.weight`, [out, rank]);
      }
    }
    expect(new Map(exported.map((t) => [t.name, t.shape]))).toEqual(want);
    session.dispose();
    f.weights.destroy();
  });
});
