import { afterAll, describe, it } from 'vitest';
import type { KernelCall } from '../../src/engine/gpu/kernel-call';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { createDenseKernels } from '../../src/engine/kernels/registry';
import { lmHeadWeights } from '../../src/engine/model/weights/kernel-args';
import type { Architecture } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { attentionForward } from '../../src/engine/reference/attention';
import { expectClose } from '../../src/engine/reference/check';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { layerUsesRope } from '../../src/engine/model/config/rope';
import { ropeForward } from '../../src/engine/reference/rope';
import { destroyContexts, kernelContext, read, upload, zeros } from './dense-helpers';
import { testModel } from './decode-helpers';

afterAll(destroyContexts);

/**
 * A whole prefill forward of one sequence with the dense kernels, as a prefill graph would chain them
 * (docs/engine.md "Dense kernels"): embedding, then per layer RmsNorm -> Gemm(qkv, bias) ->
 * [q/k-norm, RoPE, attention: the attention engineer's kernels, done here in TypeScript on the GEMM
 * output read back] -> Gemm(o_proj, += residual) -> RmsNorm -> Gemm(gate_up) -> SwiGlu ->
 * Gemm(down, += residual), then LmHead on every row. Logits must match the reference model's.
 */
async function prefill(arch: Architecture, dtype: DType, tokens: number[]) {
  const ctx = await kernelContext();
  const { cfg, weights, ref } = await testModel(ctx, arch, dtype, 91, { outputBias: arch === 'llama', mlpBias: arch === 'llama' });
  const k = createDenseKernels(ctx);
  const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F, vocabSize: V, rmsNormEps: eps } = cfg;
  const T = tokens.length;
  const NQKV = (NH + 2 * NKV) * HS;
  const h = zeros(ctx, T * C);
  const x = zeros(ctx, T * C);
  const qkv = zeros(ctx, T * NQKV);
  const gu = zeros(ctx, T * 2 * F);
  const act = zeros(ctx, T * F);
  await runCalls(ctx, k.embedding.encode({ out: h, tokens: upload(ctx, Uint32Array.from(tokens)), embedding: weights.embedding, T }));
  const positions = tokens.map((_, t) => t);
  for (let l = 0; l < cfg.numLayers; l++) {
    const w = weights.layers[l];
    await runCalls(ctx, [
      ...k.rmsnorm.encode({ out: x, inp: h, N: T, C, vectors: weights.vectors, weightOffset: w.inputNorm, eps }),
      ...k.gemm.encode({
        out: qkv,
        a: x,
        b: { weight: w.qkv, layout: 'rows-are-n' },
        M: T,
        N: NQKV,
        K: C,
        vectors: weights.vectors,
        bias: w.qkvBias,
      }),
    ]);
    // Attention inputs as qkv-prep would make them, then causal attention (reference ops).
    const all = await read(ctx, qkv, T * NQKV);
    const q = new Float32Array(T * NH * HS);
    const kk = new Float32Array(T * NKV * HS);
    const v = new Float32Array(T * NKV * HS);
    for (let t = 0; t < T; t++) {
      q.set(all.subarray(t * NQKV, t * NQKV + NH * HS), t * NH * HS);
      kk.set(all.subarray(t * NQKV + NH * HS, t * NQKV + (NH + NKV) * HS), t * NKV * HS);
      v.set(all.subarray(t * NQKV + (NH + NKV) * HS, (t + 1) * NQKV), t * NKV * HS);
    }
    const rl = ref.layers[l];
    if (rl.qNorm && rl.kNorm) {
      rmsnormForward(q, null, q, rl.qNorm, T * NH, HS, eps);
      rmsnormForward(kk, null, kk, rl.kNorm, T * NKV, HS, eps);
    }
    if (layerUsesRope(cfg, l)) {
      ropeForward(q, q, positions, ref.invFreq, T, NH, HS);
      ropeForward(kk, kk, positions, ref.invFreq, T, NKV, HS);
    }
    const att = new Float32Array(T * NH * HS);
    attentionForward(att, q, kk, v, T, T, NH, NKV, HS, 0);
    const calls: KernelCall[] = [
      ...k.gemm.encode({
        out: h,
        a: upload(ctx, att),
        b: { weight: w.o, layout: 'rows-are-n' },
        M: T,
        N: C,
        K: NH * HS,
        vectors: weights.vectors,
        bias: w.oBias,
        accumulate: true,
      }),
      ...k.rmsnorm.encode({ out: x, inp: h, N: T, C, vectors: weights.vectors, weightOffset: w.postNorm, eps }),
      ...k.gemm.encode({
        out: gu,
        a: x,
        b: { weight: w.gateUp, layout: 'rows-are-n' },
        M: T,
        N: 2 * F,
        K: C,
        vectors: weights.vectors,
        bias: w.gateUpBias,
      }),
      ...k.swiglu.encode({ out: act, gateUp: gu, T, F }),
      ...k.gemm.encode({
        out: h,
        a: act,
        b: { weight: w.down, layout: 'rows-are-n' },
        M: T,
        N: C,
        K: F,
        vectors: weights.vectors,
        bias: w.downBias,
        accumulate: true,
      }),
    ];
    await runCalls(ctx, calls);
  }
  const logits = zeros(ctx, T * V);
  await runCalls(ctx, k.lmHead.encode({ head: lmHeadWeights(weights), logits, hidden: h, R: T, scratch: zeros(ctx, T * C) }));
  expectClose(await read(ctx, logits, T * V), ref.forward(tokens), { atol: 2e-3, rtol: 2e-3 }, `${arch} prefill logits`);
  weights.destroy();
}

describe('a whole prefill forward with the dense kernels against the reference model', () => {
  it('llama (bf16, untied lm_head, o_proj and MLP biases), 9 tokens', async () => {
    await prefill('llama', 'bf16', [3, 141, 59, 26, 5, 35, 89, 79, 32]);
  });
  it('phi3 (bf16, fused qkv_proj / gate_up_proj, partial rotary, LongRoPE past its switch at 24), 30 tokens', async () => {
    await prefill(
      'phi3',
      'bf16',
      Array.from({ length: 30 }, (_, i) => (i * 53 + 7) % 211),
    );
  });
  it('qwen3 (f16, q/k-norm, tied lm_head), 70 tokens: lm_head through the GEMM', async () => {
    await prefill(
      'qwen3',
      'f16',
      Array.from({ length: 70 }, (_, i) => (i * 37 + 11) % 211),
    );
  });
});
