import { afterAll, describe, expect, it } from 'vitest';
import { destroyContexts } from './dense-helpers';
import { runDecode } from './decode-step-driver';

afterAll(destroyContexts);

// GQA ratio 1 here (ratio 3 in the llama run)
const OVERRIDES = { numHeads: 4, numKvHeads: 4 };

describe('whole decode steps of the dense kernels against the reference model (qwen2)', () => {
  it('f16: two sequences joining at different steps, prompts token by token, then greedy', async () => {
    const run = await runDecode(
      'qwen2',
      'f16',
      [
        [3, 1, 4, 1, 5, 9, 2, 6],
        [27, 18],
      ],
      [0, 3],
      5,
      128,
      OVERRIDES,
    );
    expect(run.gpu).toEqual(run.ref);
    expect(run.gpu.map((g) => g.length)).toEqual([5, 5]);
    expect(run.perLayer).toBe(3);
  });
});
