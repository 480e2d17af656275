// Gemma 3 against transformers' own numbers (issue 21). scripts/golden/gemma3_transformers.py ran
// transformers (float32, eager attention) and peft on the golden checkpoint (gemma-3-270m's per-layer
// shape: hidden 640, 4 heads, 1 KV head, head_dim 256, query_pre_attn_scalar 256; 5 sliding layers
// with a 16-token window and rope_local_base_freq, 1 global with rope_theta and linear rope_scaling;
// seeded bf16 weights, remade here from their seed) and wrote the prompt's logprobs to
// fixtures/gemma3-transformers.golden.json. Hearth's reference forward, the GPU engine's oracle, must
// give the same logprobs to 1e-4 nats: with the base model, and with a LoRA adapter after one SFT step
// of Hearth's reference trainer, in the PEFT files an SFT job's checkpoint is exported as, as
// transformers + peft load them.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { logSumExp } from '../../../src/engine/reference/logprobs';
import { referenceLora } from '../../../src/engine/reference/lora';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { readTensors } from '../../../src/service/adapters/peft-files';
import {
  GOLDEN_LORA,
  GOLDEN_PROMPT,
  goldenAdapterFiles,
  goldenConfig,
  goldenSftAdapter,
  goldenSafetensors,
  goldenTensors,
} from './gemma3-golden';

interface GoldenLogprobs {
  prompt_logprobs: number[];
  rows: Record<string, number[]>;
}
const golden = JSON.parse(readFileSync(new URL('./fixtures/gemma3-transformers.golden.json', import.meta.url), 'utf8')) as {
  weights_sha256: string;
  prompt: number[];
  base: GoldenLogprobs;
  lora: GoldenLogprobs;
};

/** log_softmax of one row, in f64. */
function logSoftmax(row: Float32Array): Float64Array {
  const lse = logSumExp(row);
  return Float64Array.from(row, (x) => x - lse);
}

/** The largest |Δ| between Hearth's logits and transformers' logprobs: at the prompt's tokens, and over the kept rows. */
function worstDifference(logits: Float32Array, want: GoldenLogprobs, V: number) {
  const prompt = GOLDEN_PROMPT;
  let tokens = 0;
  for (let t = 0; t + 1 < prompt.length; t++) {
    const lp = logSoftmax(logits.subarray(t * V, (t + 1) * V))[prompt[t + 1]];
    tokens = Math.max(tokens, Math.abs(lp - want.prompt_logprobs[t]));
  }
  let rows = 0;
  for (const [t, row] of Object.entries(want.rows)) {
    const lp = logSoftmax(logits.subarray(Number(t) * V, (Number(t) + 1) * V));
    row.forEach((x, v) => (rows = Math.max(rows, Math.abs(lp[v] - x))));
  }
  return { tokens, rows };
}

describe('Gemma 3 against transformers', () => {
  const cfg = goldenConfig();
  const tensors = goldenTensors();
  const model = new ReferenceModel(cfg, tensors);

  it('the golden numbers are for these weights and this prompt', () => {
    expect(createHash('sha256').update(goldenSafetensors(tensors)).digest('hex')).toBe(golden.weights_sha256);
    expect(golden.prompt).toEqual(GOLDEN_PROMPT);
    expect(cfg.layerTypes.filter((t) => t === 'sliding_attention')).toHaveLength(5);
  });

  it('gives the prompt logprobs transformers gives, to 1e-4 nats', () => {
    const worst = worstDifference(model.forward(GOLDEN_PROMPT), golden.base, cfg.vocabSize);
    expect(worst.tokens, 'largest prompt-logprob difference (nats)').toBeLessThan(1e-4);
    expect(worst.rows, 'largest logprob difference over the vocabulary (nats)').toBeLessThan(1e-4);
  }, 60_000);

  it("with Hearth's PEFT export of an SFT-trained adapter, gives what transformers + peft give", async () => {
    const files = goldenAdapterFiles(goldenSftAdapter(model));
    const adapter = referenceLora(cfg, GOLDEN_LORA, await readTensors(files.adapterModel, 'adapter_model.safetensors'));
    const worst = worstDifference(model.forward(GOLDEN_PROMPT, undefined, adapter), golden.lora, cfg.vocabSize);
    expect(worst.tokens, 'largest prompt-logprob difference with the adapter (nats)').toBeLessThan(1e-4);
    expect(worst.rows).toBeLessThan(1e-4);
    // The step matters: transformers' logprobs with the adapter are far from those without, and better on average.
    const moved = golden.lora.prompt_logprobs.map((x, t) => x - golden.base.prompt_logprobs[t]);
    expect(Math.max(...moved.map(Math.abs))).toBeGreaterThan(0.05);
    expect(moved.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  }, 60_000);
});
