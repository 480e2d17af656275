/**
 * The model runner against the reference model, whole-model logits at every step:
 * chunked prefill of three prompts in one batch (a 73-token step through the GEMM path, a 25-token
 * step through the GEMV path, prompts finishing in different steps), prompt logprobs of a chunk,
 * then greedy decode steps of all three sequences through the fused decode graph (or, with
 * fusedMaxBatch 2, the unfused MLP pair), and LoRA: two adapters of different ranks and target
 * modules beside a row without one, in prefill and in decode (the LoRA decode graph).
 * Tolerance: |gpu - ref| <= 2e-3 + 2e-3 |ref| on every logit (f32 accumulation over bf16/f16/f32
 * weights; the reference accumulates in f64). Greedy tokens must be identical.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { LoraPool } from '../../src/engine/generate/lora-pool';
import type { RunnerRow } from '../../src/engine/generate/step-spec';
import type { Architecture } from '../../src/engine/model/config/model-config';
import type { DType } from '../../src/engine/tensor/dtype';
import { DecodeOProj } from '../../src/engine/kernels/decode-o-proj';
import { DecodeQkv } from '../../src/engine/kernels/decode-qkv';
import type { DenseKernels } from '../../src/engine/kernels/registry';
import type { LoraModule } from '../../src/engine/model/lora/peft-modules';
import { NO_ADAPTER } from '../../src/engine/kernels/kv-layout';
import { expectClose } from '../../src/engine/reference/check';
import { promptLogprobsReference } from '../../src/engine/reference/logprobs';
import { randomLoraTensors, referenceLora, type ReferenceLora } from '../../src/engine/reference/lora';
import type { ReferenceSession } from '../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../src/engine/reference/random-model';
import { randomGemma3Tensors, tinyGemma3Config } from '../unit/model/gemma3-fixtures';
import { Rng } from '../../src/engine/tensor/random';
import {
  argmax,
  destroyGenerateContext,
  generateContext,
  lastLogits,
  randomTokens,
  runnerFixture,
  type RunnerFixture,
} from './generate-helpers';

afterAll(destroyGenerateContext);

const TOL = { atol: 2e-3, rtol: 2e-3 };

interface Seq {
  prompt: number[];
  done: number;
  out: number[];
  session: ReferenceSession;
  slot: number;
}

/**
 * Runs prompts of lengths 21, 7, 70 through two prefill steps and `decodeSteps` greedy steps,
 * checking logits and tokens against reference sessions (each with its adapter, if any).
 */
async function prefillThenDecode(
  f: RunnerFixture,
  adapters: Array<{ slot: number; lora: ReferenceLora } | null>,
  decodeSteps: number,
  expectGraph: string,
) {
  const V = f.cfg.vocabSize;
  const rng = new Rng(5);
  const seqs: Seq[] = [21, 7, 70].map((n, i) => ({
    prompt: randomTokens(rng, n, V),
    done: 0,
    out: [],
    session: f.ref.session(adapters[i]?.lora ?? null),
    slot: adapters[i]?.slot ?? NO_ADAPTER,
  }));
  seqs.forEach((s, i) => f.runner.sampler.admit(i, { temperature: 0 }, s.prompt));
  const row = (i: number, count: number): RunnerRow => ({
    seq: i,
    pos: seqs[i].done,
    tokens: seqs[i].prompt.slice(seqs[i].done, seqs[i].done + count),
    adapterSlot: seqs[i].slot,
  });
  const chunks = [
    [16, 7, 50],
    [5, 0, 20],
  ];
  for (const [c, chunk] of chunks.entries()) {
    const rows = chunk.map((n, i) => (n > 0 ? { i, r: row(i, n) } : null)).filter((x) => x !== null);
    const finishing = rows.map((x, b) => ({ ...x, b })).filter(({ i, r }) => seqs[i].done + r.tokens.length === seqs[i].prompt.length);
    const pl = c === 0 ? { row: 0, first: 0, targets: seqs[0].prompt.slice(1, 17), k: 3 } : null;
    const result = await f.runner.run({
      rows: rows.map((x) => x.r),
      samples: finishing.map(({ i, b }) => ({ slot: i, outputLen: 0, row: b })),
      promptLogprobs: pl,
    });
    expect(result.graph).toBe('prefill');
    const got = await lastLogits(f, finishing.length);
    for (const { i, r } of rows) {
      const want = seqs[i].session.append(r.tokens);
      seqs[i].done += r.tokens.length;
      if (i === 0 && pl) {
        const wantLp = promptLogprobsReference(want.subarray(0, 16 * V), pl.targets, V, 3);
        result.promptLogprobs!.forEach((p, t) => {
          expect(p.logprob).toBeCloseTo(wantLp[t].logprob, 2);
          expect(p.rank).toBe(wantLp[t].rank);
          expect(p.top.map((x) => x.id)).toEqual(wantLp[t].top.map((x) => x.id));
        });
      }
      const k = finishing.findIndex((x) => x.i === i);
      if (k >= 0) {
        const last = want.subarray((r.tokens.length - 1) * V);
        expectClose(got.subarray(k * V, (k + 1) * V), last, TOL, `prefill step ${c} sequence ${i}`);
        expect(result.sampled[k].token).toBe(argmax(last));
        seqs[i].out.push(result.sampled[k].token);
      }
    }
  }
  for (let s = 0; s < decodeSteps; s++) {
    const rows = seqs.map((q, i) => ({ seq: i, pos: q.done, tokens: [q.out[q.out.length - 1]], adapterSlot: q.slot }));
    const result = await f.runner.run({ rows, samples: seqs.map((q, i) => ({ slot: i, outputLen: q.out.length, row: i })) });
    expect(result.graph).toBe(expectGraph);
    const got = await lastLogits(f, seqs.length);
    seqs.forEach((q, i) => {
      const want = q.session.append([q.out[q.out.length - 1]]);
      q.done++;
      expectClose(got.subarray(i * V, (i + 1) * V), want, TOL, `decode step ${s} sequence ${i}`);
      expect(result.sampled[i].token).toBe(argmax(want));
      q.out.push(result.sampled[i].token);
    });
  }
  return seqs;
}

describe('model runner: whole-model logits against the reference', () => {
  // qwen3 with MLP slices of 32: five partials (the last of 8 wide) for each consumer to add.
  const cases: Array<[Architecture, DType, number, string, number?]> = [
    ['llama', 'bf16', 4, 'decode-fused'],
    // One weight dtype here (bf16, as the real models) so the three share compiled pipelines; the
    // engine tests run the bundled f16 (tiny-qwen2) and f32 (tiny-qwen3) models.
    ['qwen2', 'bf16', 2, 'decode-unfused'],
    ['qwen3', 'bf16', 4, 'decode-fused', 32],
  ];
  for (const [arch, dtype, fusedMaxBatch, graph, mlpSlice] of cases) {
    it(`${arch} (${dtype}): chunked prefill of three prompts, prompt logprobs, greedy decode (${graph}${mlpSlice ? `, MLP slices of ${mlpSlice}` : ''})`, async () => {
      const ctx = await generateContext();
      const f = await runnerFixture(ctx, arch, dtype, 300, { fusedMaxBatch, mlpSlice });
      try {
        // F = 136: two slices of 128 (the second 8 wide) by default, five of 32.
        expect(f.runner.step.stream.partials).toBe(mlpSlice === 32 ? 5 : 2);
        const seqs = await prefillThenDecode(f, [null, null, null], 4, graph);
        expect(seqs.map((s) => s.out.length)).toEqual([5, 5, 5]);
      } finally {
        f.destroy();
      }
    });
  }

  // Fused matrices whose parts differ in dtype keep each part in its own (row segments, as a Q4_K_M
  // GGUF's Q6_K v_proj beside Q4_K q / k): a qkv runs DecodeQkv once per segment (qwen3: the q/k-norm
  // unit is the whole head; with a LoRA row too), a [gate; up] sends decode to the general graph
  // (fusedDecodeCovers).
  for (const [arch, part, graph] of [
    ['qwen3', 'v_proj', 'decode-fused'],
    ['llama', 'up_proj', 'decode-general'],
  ] as const) {
    it(`${arch} (bf16, ${part} f16): prefill and greedy decode (${graph}) over a fused matrix of two dtypes`, async () => {
      const ctx = await generateContext();
      const cfg = testConfig(arch);
      const f16 = randomModelTensors(cfg, 'f16', 330);
      const tensors = randomModelTensors(cfg, 'bf16', 330).map((t, i) => (t.name.includes(`.${part}.`) ? f16[i] : t));
      const f = await runnerFixture(ctx, arch, 'bf16', 330, { model: { cfg, tensors } });
      try {
        const fused = f.weights.layers[0][part === 'v_proj' ? 'qkv' : 'gateUp'];
        expect(fused.segments.map((sg) => sg.dtype)).toEqual(['bf16', 'f16']);
        await prefillThenDecode(f, [null, null, null], 2, graph);
        if (arch !== 'qwen3') return;
        // A LoRA row there: DecodeQkv's LoRA variant once per segment, each adding the terms of its heads.
        const pool = new LoraPool(ctx.device, f.cfg, { poolBytes: 4 << 20, maxSlots: 2 });
        try {
          const a = randomLoraTensors(f.cfg, 4, ['k_proj', 'v_proj'], 16, 'f32');
          const aCfg = { rank: 4, alpha: 8, targetModules: [], useRslora: false };
          const slot = pool.upload('a', aCfg, a)!;
          f.runner.attachLora(pool);
          for (const i of [0, 1, 2]) f.runner.sampler.release(i);
          await prefillThenDecode(f, [null, null, { slot, lora: referenceLora(f.cfg, aCfg, a) }], 2, 'decode-fused-lora');
        } finally {
          pool.destroy();
        }
      } finally {
        f.destroy();
      }
    });
  }

  it('phi3 (fused projections, partial rotary, LongRoPE), a LoRA on its fused modules beside a base row', async () => {
    const ctx = await generateContext();
    const f = await runnerFixture(ctx, 'phi3', 'bf16', 320);
    const pool = new LoraPool(ctx.device, f.cfg, { poolBytes: 4 << 20, maxSlots: 4 });
    try {
      const a = randomLoraTensors(f.cfg, 4, ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'], 13, 'bf16');
      const aCfg = { rank: 4, alpha: 8, targetModules: [], useRslora: false };
      const slotA = pool.upload('a', aCfg, a)!;
      f.runner.attachLora(pool);
      await prefillThenDecode(f, [{ slot: slotA, lora: referenceLora(f.cfg, aCfg, a) }, null], 3, 'decode-fused-lora');
      // Separate q/k/v modules are not this model's: the pool refuses them by name.
      const wrong = randomLoraTensors(f.cfg, 4, ['q_proj'], 14);
      expect(() => pool.upload('b', aCfg, wrong)).toThrow(/adapts q_proj, which this phi3 model does not have/);
    } finally {
      pool.destroy();
      f.destroy();
    }
  });

  // Gemma 3 in gemma-3-270m's config format: 6 layers (5 sliding with rope_local_base_freq, 1 global),
  // query_pre_attn_scalar != head_dim (the scale the engine folds into q_norm), bf16 weights (the
  // embedding normaliser rounded to bf16 as transformers does). Decode runs the fused graph (chosen:
  // by default Gemma decodes through the general graph, decode-graph.ts DecodeGraphChoice). The
  // window (128) is longer than these contexts, where sliding and full attention agree.
  it('gemma3 (bf16): chunked prefill, prompt logprobs, greedy decode (the fused graph), and a LoRA adapter on it', async () => {
    const ctx = await generateContext();
    const cfg = tinyGemma3Config({ sliding_window: 128, query_pre_attn_scalar: 24 });
    const f = await runnerFixture(ctx, 'gemma3', 'bf16', 320, {
      model: { cfg, tensors: randomGemma3Tensors(cfg, 'bf16', 320) },
      decodeGraph: 'fused',
    });
    const pool = new LoraPool(ctx.device, f.cfg, { poolBytes: 4 << 20, maxSlots: 2 });
    try {
      const seqs = await prefillThenDecode(f, [null, null, null], 2, 'decode-fused');
      expect(seqs.map((s) => s.out.length)).toEqual([3, 3, 3]);
      const a = randomLoraTensors(f.cfg, 4, ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], 13, 'f32');
      const aCfg = { rank: 4, alpha: 8, targetModules: [], useRslora: false };
      const slot = pool.upload('a', aCfg, a)!;
      f.runner.attachLora(pool);
      // The same rows again from position 0 (their KV entries are overwritten), one with the adapter.
      for (const i of [0, 1, 2]) f.runner.sampler.release(i);
      await prefillThenDecode(f, [{ slot, lora: referenceLora(f.cfg, aCfg, a) }, null, null], 2, 'decode-fused-lora');
      expect(f.runner.describeDecode(3, 16, true).dispatchesPerLayer).toBe(7);
    } finally {
      pool.destroy();
      f.destroy();
    }
  });

  // Gemma 3 on the fused decode graph (sandwich norms, GeGLU, the local RoPE table and the scaled
  // embedding folded into the 4 decode kernels): 4 dispatches per layer. A DecodeOProj with a merge
  // buffer of 4 weights sends 3 rows at 2 splits (8) to AttentionMerge + Gemv, whose output goes to
  // the stream's branch block. A qkv of two dtypes (a Q4_K_M GGUF's Q6_K v_proj) runs DecodeQkv per
  // segment, the first writing the residual; above fusedMaxBatch (2 here) Gemma folds the MLP
  // partials into the residual once per layer (DecodeFinalize's sandwich variant) before DecodeQkv.
  it(
    'gemma3 (f32): 4 dispatches per layer; o_proj past the merge buffer; a qkv of two dtypes; the partials folded above fusedMaxBatch',
    { timeout: 300_000 },
    async () => {
      const ctx = await generateContext();
      const cfg = tinyGemma3Config({ sliding_window: 128 });
      const tensors = randomGemma3Tensors(cfg, 'f32', 330);
      const small = await runnerFixture(ctx, 'gemma3', 'f32', 330, {
        model: { cfg, tensors },
        dense: { decodeOProj: new DecodeOProj(ctx, { mergeCap: 4 }) },
        decodeGraph: 'fused',
      });
      try {
        const one = small.runner.describeDecode(1, 16);
        expect([one.mlp, one.fusedOProj, one.dispatchesPerLayer]).toEqual(['fused', true, 4]);
        const three = small.runner.describeDecode(3, 100);
        expect([three.mlp, three.fusedOProj, three.dispatchesPerLayer]).toEqual(['fused', false, 5]);
        await prefillThenDecode(small, [null, null, null], 2, 'decode-fused');
        // LoRA rows there: o_proj's term is the batched LoRA on the merged rows, into the branch block.
        const pool = new LoraPool(ctx.device, small.cfg, { poolBytes: 4 << 20, maxSlots: 2 });
        try {
          const a = randomLoraTensors(small.cfg, 4, ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'], 15, 'f32');
          const aCfg = { rank: 4, alpha: 8, targetModules: [], useRslora: false };
          const slot = pool.upload('a', aCfg, a)!;
          small.runner.attachLora(pool);
          const lora = small.runner.describeDecode(3, 100, true);
          expect([lora.lora, lora.fusedOProj, lora.dispatchesPerLayer]).toEqual([true, false, 9]);
          for (const i of [0, 1, 2]) small.runner.sampler.release(i);
          await prefillThenDecode(small, [null, { slot, lora: referenceLora(small.cfg, aCfg, a) }, null], 2, 'decode-fused-lora');
        } finally {
          pool.destroy();
        }
      } finally {
        small.destroy();
      }
      const f16 = randomGemma3Tensors(cfg, 'f16', 331);
      const mixed = tensors.map((t, i) => (t.name.includes('.v_proj.') ? f16[i] : t));
      const f = await runnerFixture(ctx, 'gemma3', 'f32', 330, { model: { cfg, tensors: mixed }, fusedMaxBatch: 2, decodeGraph: 'fused' });
      try {
        expect(f.weights.layers[0].qkv.segments.map((sg) => sg.dtype)).toEqual(['f32', 'f16']);
        expect(f.runner.describeDecode(1, 16).dispatchesPerLayer).toBe(5);
        // Above fusedMaxBatch the partials are folded once per layer first: one more dispatch.
        const folded = f.runner.describeDecode(3, 16);
        expect([folded.mlp, folded.dispatchesPerLayer]).toEqual(['folded', 6]);
        await prefillThenDecode(f, [null, null, null], 2, 'decode-folded');
      } finally {
        f.destroy();
      }
    },
  );

  // LoRA rows on the fused decode graph (decode-lora.ts): DecodeLora folds and shrinks, the kernels'
  // LoRA variants expand: 7 dispatches per layer. qwen3: the term lands before q/k-norm and RoPE;
  // qwen2: q/k/v biases, and o_proj past the merge buffer (AttentionMerge + Gemv + the batched LoRA
  // o, 9 per layer). Both at B = 3 above fusedMaxBatch 2: LoRA batches keep the fused MLP. A device
  // with WebGPU's default 8 storage buffers per stage decodes them through the general graph.
  for (const arch of ['qwen3', 'qwen2'] as const) {
    it(`${arch}: LoRA rows on the fused decode graph beside a base row; the general graph on an 8-binding device`, async () => {
      const ctx = await generateContext();
      const modules: LoraModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
      const aCfg = { rank: 8, alpha: 16, targetModules: [], useRslora: false };
      // Rank 6: the LoRA loops' four-at-a-time loads end with a remainder.
      const bCfg = { rank: 6, alpha: 4, targetModules: [], useRslora: true };
      const run = async (dense: Partial<DenseKernels>, graph: string, perLayer: number | null): Promise<number> => {
        // qwen3's MLP in slices of 32: DecodeLora folds five partials and their down-shrink shares.
        const f = await runnerFixture(ctx, arch, 'bf16', 340, { fusedMaxBatch: 2, dense, mlpSlice: arch === 'qwen3' ? 32 : undefined });
        const pool = new LoraPool(ctx.device, f.cfg, { poolBytes: 4 << 20, maxSlots: 4 });
        try {
          const a = randomLoraTensors(f.cfg, 8, modules, 21, 'f32');
          const b = randomLoraTensors(f.cfg, 6, ['k_proj', 'o_proj', 'up_proj'], 22, 'bf16');
          const slotA = pool.upload('a', aCfg, a)!;
          const slotB = pool.upload('b', bCfg, b)!;
          f.runner.attachLora(pool);
          const g = f.runner.describeDecode(3, 100, true);
          if (perLayer === null) expect(g.dispatchesPerLayer).toBeGreaterThan(15);
          else expect([g.lora, g.mlp, g.dispatchesPerLayer]).toEqual([true, 'fused', perLayer]);
          // The bench's comparison: the general graph described on a device that runs the fused one.
          const general = f.runner.describeGeneralDecode(3, 100, true).dispatchesPerLayer;
          await prefillThenDecode(
            f,
            [{ slot: slotA, lora: referenceLora(f.cfg, aCfg, a) }, null, { slot: slotB, lora: referenceLora(f.cfg, bCfg, b) }],
            3,
            graph,
          );
          return general;
        } finally {
          pool.destroy();
          f.destroy();
        }
      };
      const narrowOProj = arch === 'qwen2' ? { decodeOProj: new DecodeOProj(ctx, { mergeCap: 4 }) } : {};
      const general = await run(narrowOProj, 'decode-fused-lora', arch === 'qwen2' ? 9 : 7);
      // The general graph described beside the fused one is the graph the 8-binding device runs.
      expect(await run({ decodeQkv: new DecodeQkv({ ...ctx, maxStorageBuffersPerStage: 8 }) }, 'decode-lora', null)).toBe(general);
    });
  }

  it('llama with two LoRA adapters (rank 4 on every module, rank 8 on q, v, down) beside a base row', async () => {
    const ctx = await generateContext();
    const f = await runnerFixture(ctx, 'llama', 'bf16', 310);
    const pool = new LoraPool(ctx.device, f.cfg, { poolBytes: 4 << 20, maxSlots: 4 });
    try {
      const a = randomLoraTensors(f.cfg, 4, ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], 11, 'bf16');
      const b = randomLoraTensors(f.cfg, 8, ['q_proj', 'v_proj', 'down_proj'], 12, 'f32');
      const aCfg = { rank: 4, alpha: 8, targetModules: [], useRslora: false };
      const bCfg = { rank: 8, alpha: 16, targetModules: [], useRslora: true };
      const slotA = pool.upload('a', aCfg, a)!;
      const slotB = pool.upload('b', bCfg, b)!;
      f.runner.attachLora(pool);
      const seqs = await prefillThenDecode(
        f,
        [{ slot: slotA, lora: referenceLora(f.cfg, aCfg, a) }, null, { slot: slotB, lora: referenceLora(f.cfg, bCfg, b) }],
        3,
        'decode-fused-lora',
      );
      // The adapters change the model: the adapted logits of prompt 0 are far from the base model's.
      const V = f.cfg.vocabSize;
      const last = (lora: ReferenceLora | null) =>
        f.ref
          .session(lora)
          .append(seqs[0].prompt)
          .subarray((seqs[0].prompt.length - 1) * V);
      const base = last(null);
      const adapted = last(referenceLora(f.cfg, aCfg, a));
      expect(Math.max(...adapted.map((x, i) => Math.abs(x - base[i])))).toBeGreaterThan(0.1);
    } finally {
      pool.destroy();
      f.destroy();
    }
  });
});
