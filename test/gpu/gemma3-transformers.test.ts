// Gemma 3 on the GPU against transformers' own numbers (issue 21): the training engine's prompt
// logprobs on the golden checkpoint (gemma-3-270m's per-layer shape, seeded bf16 weights; the unit
// test test/unit/model/gemma3-transformers.test.ts holds the reference forward to the same file, with
// and without an SFT adapter), through a fresh adapter (B = 0), against what transformers gave
// (fixtures/gemma3-transformers.golden.json). Measured on SwiftShader: 6.1e-6 nats.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { LORA_MODULES } from '../../src/engine/model/lora/peft-modules';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import { GOLDEN_LORA, GOLDEN_PROMPT, goldenConfig, goldenTensors } from '../unit/model/gemma3-golden';
import { destroyContexts, kernelContext } from './dense-helpers';
import { loraConfig, OPTIMIZER } from './train-helpers';

afterAll(destroyContexts);

const golden = JSON.parse(readFileSync(new URL('../unit/model/fixtures/gemma3-transformers.golden.json', import.meta.url), 'utf8')) as {
  base: { prompt_logprobs: number[] };
};

describe('Gemma 3 on the GPU against transformers', () => {
  it('gives the prompt logprobs transformers gives', async () => {
    const ctx = await kernelContext();
    const cfg = goldenConfig();
    const tensors = goldenTensors();
    const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 64 });
    const engine = new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {} });
    const lora = loraConfig(LORA_MODULES, GOLDEN_LORA.rank, GOLDEN_LORA.alpha);
    const seqs = [{ tokens: Uint32Array.from(GOLDEN_PROMPT), trainable: new Uint8Array(GOLDEN_PROMPT.length).fill(1) }];
    const session = engine.sessionFor(weights, { lora, initialAdapter: null, optimizerState: null, optimizer: OPTIMIZER, seed: 1 });
    const [lp] = await session.logprobs(seqs);
    session.dispose();
    const worst = Math.max(...golden.base.prompt_logprobs.map((x, t) => Math.abs(lp[t + 1] - x)));
    expect(worst, 'GPU vs transformers (nats)').toBeLessThan(1e-4);
    weights.destroy();
  }, 180_000);
});
