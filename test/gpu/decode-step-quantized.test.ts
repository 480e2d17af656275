import { afterAll, describe, expect, it } from 'vitest';
import type { DType } from '../../src/engine/tensor/dtype';
import { destroyContexts } from './dense-helpers';
import { runDecode } from './decode-step-driver';

afterAll(destroyContexts);

/**
 * A random model whose matrices are GGML blocks, mixed per tensor as a llama.cpp Q4_K_M file mixes
 * them: attention in Q8_0 but v_proj in Q6_K (so the fused qkv is two row segments, one DecodeQkv
 * dispatch each), the MLP and the embedding in Q4_K, down_proj and the untied lm_head in Q6_K. Whole
 * decode steps through the fused decode kernels (qkv, o_proj, mlp), the embedding gather and lm_head
 * must give the reference forward's logits on the same weights dequantized to f32.
 */
describe('whole decode steps of a quantized model against the reference on dequantized weights', () => {
  it('llama with Q8_0 q / k / o, Q6_K v, Q4_K MLP and embedding, Q6_K down_proj and lm_head', async () => {
    const dtypeOf = (name: string): DType => {
      if (name.includes('down_proj') || name.includes('v_proj') || name === 'lm_head.weight') return 'q6_k';
      if (name.includes('self_attn')) return 'q8_0';
      return 'q4_k';
    };
    const run = await runDecode('llama', dtypeOf, [[5, 17, 3], [40]], [0, 1], 2, 32, {
      hiddenSize: 256,
      numHeads: 8,
      numKvHeads: 2,
      headDim: 32,
      intermediateSize: 256,
      vocabSize: 67,
    });
    expect(run.gpu).toEqual(run.ref);
    expect(run.gpu.map((g) => g.length)).toEqual([2, 2]);
  });
});
