/**
 * QLoRA: one training step of the GPU trainer over a frozen quantized base (GGML blocks, dequantized
 * inside the GEMMs of the forward and of the backward dX through each frozen weight) against the
 * reference trainer on the same weights dequantized to f32: the policy's logprobs and every f32 LoRA
 * gradient. Two block types (few, as each compiles its own GEMMs): one of 34-byte blocks (Q8_0, rows
 * padded by a zero block) and one with a min and a 5th bit (Q5_1), mixed inside the fused matrices as
 * llama.cpp's Q4_K_M mixes attn_v with attn_q / attn_k (each part kept in its blocks: row segments,
 * one GEMM per segment forward, one partial product per segment in dX = dY W); then a model quantized on load
 * (model/quant/quantize-on-load.ts), whose Q4_K blocks (and Q8_0 fallback) a QLoRA job trains over.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PackedMatrix } from '../../src/engine/gpu/packed-tensor';
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { quantizedDtype, quantizeTensor } from '../../src/engine/model/quant/quantize-on-load';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { expectClose } from '../../src/engine/reference/check';
import { ReferenceModel } from '../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { dequantizedTensor, randomQuantizedModel } from '../../src/engine/reference/random-quantized';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import { planLora } from '../../src/engine/train/lora-plan';
import { destroyContexts, kernelContext } from './dense-helpers';
import { loraConfig, maxAbs, randomSequences, randomSession, referenceLogprobs, referenceStep } from './train-helpers';

afterAll(destroyContexts);

/** One SFT step of the GPU trainer on `tensors` against the reference on them dequantized: logprobs, loss and LoRA gradients. */
async function expectStepLikeReference(cfg: ModelConfig, tensors: TensorData[], dtypes: string[]): Promise<void> {
  const ctx = await kernelContext();
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 64 });
  const segments = (m: PackedMatrix) => m.segments.map((sg) => sg.dtype).join('+');
  expect([segments(weights.layers[0].qkv), segments(weights.layers[0].gateUp), weights.layers[0].down.dtype, weights.lmHead.dtype]).toEqual(
    dtypes,
  );
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
}

describe('one QLoRA step over a quantized base against the reference', () => {
  it('llama, Q8_0 q / k / o / up, embedding and lm_head, Q5_1 v / gate / down: logprobs and SFT LoRA gradients', async () => {
    const cfg = testConfig('llama', { intermediateSize: 160 });
    const dtypeOf = (name: string): DType => (/v_proj|gate_proj|down_proj/.test(name) ? 'q5_1' : 'q8_0');
    await expectStepLikeReference(cfg, randomQuantizedModel(cfg, dtypeOf, 31), ['q8_0+q5_1', 'q5_1+q8_0', 'q5_1', 'q8_0']);
  });

  it('llama quantized to Q4_K on load (down_proj, 160 wide, falls back to Q8_0; lm_head stays f32)', async () => {
    const cfg = testConfig('llama', { hiddenSize: 256, numHeads: 8, headDim: 32, intermediateSize: 160, numLayers: 1 });
    const tensors = await Promise.all(
      randomModelTensors(cfg, 'f32', 17).map(async (t) => {
        const dtype = quantizedDtype(cfg, t.name, t.shape, 'q4_k');
        return dtype ? quantizeTensor(t, dtype) : t;
      }),
    );
    await expectStepLikeReference(cfg, tensors, ['q4_k', 'q4_k', 'q8_0', 'f32']);
  });
});
