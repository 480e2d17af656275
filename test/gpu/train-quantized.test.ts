/**
 * QLoRA: one training step of the GPU trainer over a frozen quantized base (GGML blocks, dequantized
 * inside the GEMMs of the forward and of the backward dX through each frozen weight) against the
 * reference trainer on the same weights dequantized to f32: the policy's logprobs and every f32 LoRA
 * gradient. Two block types (few, as each compiles its own GEMMs): one of 34-byte blocks (Q8_0, rows
 * padded by a zero block) and one with a min and a 5th bit (Q5_1).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { DType } from '../../src/engine/model/config';
import { WeightSet } from '../../src/engine/model/weights';
import { expectClose } from '../../src/engine/reference/check';
import { ReferenceModel } from '../../src/engine/reference/model';
import { testConfig } from '../../src/engine/reference/random-model';
import { dequantizedTensor, randomQuantizedModel } from '../../src/engine/reference/random-quantized';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import { planLora } from '../../src/engine/train/lora-plan';
import { destroyContexts, kernelContext } from './dense-helpers';
import { loraConfig, maxAbs, randomSequences, randomSession, referenceLogprobs, referenceStep } from './train-helpers';

afterAll(destroyContexts);

describe('one QLoRA step over a quantized base against the reference', () => {
  it('llama, Q8_0 attention, embedding and lm_head, Q5_1 MLP: logprobs and SFT LoRA gradients', async () => {
    const ctx = await kernelContext();
    const cfg = testConfig('llama', { intermediateSize: 160 });
    const dtypeOf = (name: string): DType => (name.includes('mlp') ? 'q5_1' : 'q8_0');
    const tensors = randomQuantizedModel(cfg, dtypeOf, 31);
    const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 64 });
    expect([weights.layers[0].qkv.dtype, weights.layers[0].down.dtype, weights.lmHead.dtype]).toEqual(['q8_0', 'q5_1', 'q8_0']);
    const f = {
      cfg,
      weights,
      ref: new ReferenceModel(cfg, tensors.map(dequantizedTensor)),
      engine: new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {} }),
    };
    const lora = loraConfig(['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'down_proj']);
    const seqs = randomSequences(cfg.vocabSize, [13, 22], 4);
    const { session, adapter } = randomSession(f, lora, 5);
    expectClose(
      (await session.logprobs(seqs)).flatMap((a) => Array.from(a)),
      referenceLogprobs(f.ref, lora, adapter, seqs).flatMap((a) => Array.from(a)),
      { atol: 2e-3, rtol: 2e-3 },
      'logprobs',
    );
    const metrics = await session.step(seqs, { kind: 'sft' }, 1e-3);
    const ref = referenceStep(f.ref, planLora(cfg, lora), adapter, seqs, { kind: 'sft' });
    expect(metrics.loss).toBeCloseTo(ref.loss, 2);
    expectClose(await session.gradients(), ref.grads, { atol: 2e-3 * maxAbs(ref.grads), rtol: 2e-2 }, 'SFT LoRA gradients');
    session.dispose();
    weights.destroy();
  });
});
