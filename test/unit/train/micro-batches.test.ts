import { describe, expect, it } from 'vitest';
import { NO_TARGET } from '../../../src/engine/kernels/cross-entropy';
import { testConfig } from '../../../src/engine/reference/random-model';
import { planLora } from '../../../src/engine/train/lora-plan';
import { planActivations } from '../../../src/engine/train/memory-plan';
import { packMicroBatches, rowsFromTokens, tokensFromRows } from '../../../src/engine/train/micro-batches';
import type { TrainingSequence } from '../../../src/engine/train/types';

const seq = (tokens: number[]): TrainingSequence => ({
  tokens: Uint32Array.from(tokens),
  trainable: Uint8Array.from(tokens, (_, i) => (i > 0 ? 1 : 0)),
});
const limits = { tokens: 10, sequences: 3, maxBlocksPerSeq: 1, vocabSize: 100 };

describe('packing sequences into micro-batches', () => {
  it('keeps the order, fills up to the token and sequence limits, and lays out tokens, targets, rows and blocks', () => {
    const seqs = [seq([1, 2, 3]), seq([4, 5, 6, 7]), seq([8, 9]), seq([10, 11, 12]), seq([13]), seq([14]), seq([15]), seq([16])];
    const mbs = packMicroBatches(seqs, limits);
    expect(mbs.map((m) => m.sequences)).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7],
    ]);
    const [first] = mbs;
    expect(first.T).toBe(9);
    expect(first.maxCount).toBe(4);
    expect(Array.from(first.tokens)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Row t predicts the next token of its own sequence; a sequence's last row predicts nothing.
    expect(Array.from(first.targets)).toEqual([2, 3, NO_TARGET, 5, 6, 7, NO_TARGET, 9, NO_TARGET]);
    expect(first.starts).toEqual([0, 3, 7]);
    // BatchRow (seq, pos, adapter, count) per sequence; each sequence starts on its own KV block.
    expect(Array.from(first.rows)).toEqual([0, 0, 0xffffffff, 3, 1, 0, 0xffffffff, 4, 2, 0, 0xffffffff, 2]);
    expect(Array.from(first.blockTable)).toEqual([0, 1, 2]);
  });

  it('moves per-token values to rows and back, shifted by one', () => {
    const seqs = [seq([1, 2, 3]), seq([4, 5])];
    const [mb] = packMicroBatches(seqs, limits);
    const perToken = [Float32Array.of(NaN, 10, 11), Float32Array.of(NaN, 20)];
    const rows = rowsFromTokens(mb, perToken);
    expect(Array.from(rows)).toEqual([10, 11, 0, 20, 0]);
    const back: Float32Array[] = [];
    tokensFromRows(mb, rows, back);
    expect(back.map((a) => Array.from(a))).toEqual([
      [NaN, 10, 11],
      [NaN, 20],
    ]);
  });

  it('refuses a sequence longer than the plan, a token outside the vocabulary and an empty sequence', () => {
    expect(() => packMicroBatches([seq(Array.from({ length: 11 }, () => 1))], limits)).toThrow(/11 tokens, more than the 10/);
    expect(() => packMicroBatches([seq([1, 100])], limits)).toThrow(/token 100, outside the vocabulary/);
    expect(() => packMicroBatches([seq([])], limits)).toThrow(/empty/);
  });
});

describe('the activation memory plan', () => {
  const lora = (cfg: ReturnType<typeof testConfig>) =>
    planLora(cfg, { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'], useRslora: false });
  const opts = { tokens: 256, sequences: 8, mode: 'auto' as const, budgetBytes: 1 << 30, maxBindingBytes: 1 << 27 };
  const part = () => 1000;

  it('saves every layer when it fits the budget and recomputes when it does not', () => {
    const cfg = testConfig('llama', { numLayers: 4 });
    const save = planActivations(cfg, lora(cfg), opts, part);
    expect(save.mode).toBe('save');
    const tight = planActivations(cfg, lora(cfg), { ...opts, budgetBytes: save.totalBytes - 1 }, part);
    expect(tight.mode).toBe('recompute');
    expect(tight.totalBytes).toBeLessThan(save.totalBytes);
    // Only the groups with adapted modules get LoRA shrink buffers.
    expect(save.layer.map((t) => t.name)).toEqual(expect.arrayContaining(['u.qkv', 'u.down']));
    expect(save.layer.map((t) => t.name)).not.toContain('u.o');
    // KV blocks: every token, plus a partial block per sequence.
    expect(save.kvBlocks).toBe(256 / 16 + 8);
  });

  it('keeps the pre-norm projection per layer only for Qwen3 (its q/k-norm backward reads it)', () => {
    const q3 = testConfig('qwen3');
    const ll = testConfig('llama');
    expect(planActivations(q3, lora(q3), opts, part).layer.map((t) => t.name)).toContain('qkv');
    expect(planActivations(ll, lora(ll), opts, part).layer.map((t) => t.name)).not.toContain('qkv');
    expect(planActivations(ll, lora(ll), opts, part).scratch.map((t) => t.name)).toContain('qkv');
  });

  it('chunks the logits to the binding limit and refuses a tensor larger than one binding', () => {
    const cfg = testConfig('qwen2', { vocabSize: 50000 });
    const plan = planActivations(cfg, lora(cfg), { ...opts, maxBindingBytes: 4 * 50000 * 37 + 8 }, part);
    expect(plan.headRows).toBe(37);
    expect(() => planActivations(cfg, lora(cfg), { ...opts, tokens: 4096, maxBindingBytes: 1 << 20 }, part)).toThrow(
      /more than one binding allows/,
    );
  });
});
