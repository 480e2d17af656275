import { afterAll, describe, expect, it } from 'vitest';
import { destroyContexts } from './dense-helpers';
import { runDecode } from './decode-step-driver';

afterAll(destroyContexts);

describe('whole decode steps of the dense kernels against the reference model (llama)', () => {
  it('bf16, GQA 3, untied lm_head: three sequences joining at different steps, prompts token by token, then greedy', async () => {
    const run = await runDecode('llama', 'bf16', [[5, 17, 3], [200], [9, 8, 7, 6, 5]], [0, 2, 1], 4);
    expect(run.gpu).toEqual(run.ref);
    expect(run.gpu.map((g) => g.length)).toEqual([4, 4, 4]);
    // Dense kernels per layer: qkv, o_proj, mlp (attention is the fourth, another kernel family).
    expect(run.perLayer).toBe(3);
    // Per step outside the layers: embedding, finalize, lm_head (one chunk each here).
    expect(run.perStep).toBe(3);
  });
});
