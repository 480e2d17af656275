// Whole decode steps of the dense kernels against the reference model for the two families whose
// RoPE differs from Llama's: Phi-3 (fused projections, partial rotary, LongRoPE whose long factors
// start at position 24, so greedy decoding crosses the switch) and SmolLM3 (a NoPE layer).
import { afterAll, describe, expect, it } from 'vitest';
import { destroyContexts } from './dense-helpers';
import { runDecode } from './decode-step-driver';

afterAll(destroyContexts);

describe('whole decode steps of the dense kernels against the reference model (phi3, smollm3)', () => {
  it('phi3 f32: two sequences, one decoding past position 24', async () => {
    const prompt = Array.from({ length: 20 }, (_, i) => (i * 41 + 3) % 211);
    const run = await runDecode('phi3', 'f32', [prompt, [27, 18]], [0, 2], 6, 128);
    expect(run.gpu).toEqual(run.ref);
    expect(run.gpu.map((g) => g.length)).toEqual([6, 6]);
  });
  it('smollm3 f32: one sequence', async () => {
    const run = await runDecode('smollm3', 'f32', [[3, 1, 4, 1, 5, 9]], [0], 4, 128);
    expect(run.gpu).toEqual(run.ref);
  });
});
