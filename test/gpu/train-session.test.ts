// Training sessions as the job runner uses them: a fresh adapter leaves the model unchanged, a few
// steps memorise a tiny task (also on SmolLM3 with its NoPE layer and on Phi-3's fused modules, whose
// PEFT exports are checked), the same inputs give bit-identical adapters, and an exported adapter
// with its optimizer state resumes exactly where the first session stopped.
import { afterAll, describe, expect, it } from 'vitest';
import { tensorToF32 } from '../../src/engine/tensor/tensor-data';
import type { LoraModule } from '../../src/engine/model/lora/peft-modules';
import { ReferenceModel } from '../../src/engine/reference/model';
import type { LossSpec, TrainingSequence } from '../../src/engine/train/types';
import { planLora } from '../../src/engine/train/lora-plan';
import { destroyContexts, kernelContext } from './dense-helpers';
import { loraConfig, OPTIMIZER, randomSequences, referenceLogprobs, sftFromFreshAdapter, trainFixture } from './train-helpers';
import { expectClose } from '../../src/engine/reference/check';
import { crossEntropyForward } from '../../src/engine/reference/cross-entropy';

afterAll(destroyContexts);

const MODULES: LoraModule[] = ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** Base-model logprobs of every token (NaN at 0), no adapter. */
function baseLogprobs(ref: ReferenceModel, seqs: TrainingSequence[]): Float32Array[] {
  const V = ref.config.vocabSize;
  return seqs.map((s) => {
    const T = s.tokens.length;
    const out = new Float32Array(T);
    out[0] = NaN;
    crossEntropyForward(out.subarray(1), null, ref.forward(Array.from(s.tokens)), Array.from(s.tokens.subarray(1)), T - 1, V);
    return out;
  });
}

const flat = (a: Float32Array[]) => a.flatMap((x) => Array.from(x));

describe('training sessions', () => {
  it('a fresh PEFT adapter (B = 0) leaves the base model unchanged; SFT steps memorise two sequences', async () => {
    const ctx = await kernelContext();
    const f = await trainFixture(ctx, 'qwen2', 'bf16', 41);
    const lora = loraConfig(MODULES, 8, 16);
    const session = f.engine.sessionFor(f.weights, { lora, initialAdapter: null, optimizerState: null, optimizer: OPTIMIZER, seed: 1 });
    const seqs = randomSequences(f.cfg.vocabSize, [24, 17], 3).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
    expectClose(flat(await session.logprobs(seqs)), flat(baseLogprobs(f.ref, seqs)), { atol: 2e-3, rtol: 2e-3 }, 'fresh adapter logprobs');

    const losses: number[] = [];
    for (let i = 0; i < 6; i++) losses.push((await session.step(seqs, { kind: 'sft' }, 3e-2)).loss);
    // The trained adapter is what the reference model sees through PEFT tensors.
    const adapter = await session.exportAdapter();
    const after = await session.logprobs(seqs);
    expectClose(flat(after), flat(referenceLogprobs(f.ref, lora, adapter, seqs)), { atol: 3e-3, rtol: 3e-3 }, 'trained adapter logprobs');
    expect(losses[5]).toBeLessThan(0.5 * losses[0]);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);
    session.dispose();
    f.weights.destroy();
  });

  it('SmolLM3 (a NoPE layer): SFT loss falls, and the PEFT export has the llama module names', async () => {
    const ctx = await kernelContext();
    const f = await trainFixture(ctx, 'smollm3', 'bf16', 44);
    expect(f.cfg.ropeLayers).toContain(false);
    const { session, losses } = await sftFromFreshAdapter(f, loraConfig(MODULES, 8, 16), {
      seed: 3,
      dataSeed: 6,
      lengths: [24, 17],
      lr: 1e-2,
    });
    expect(losses[5]).toBeLessThan(0.5 * losses[0]);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);
    const names = (await session.exportAdapter()).map((t) => t.name);
    expect(names).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(names).toContain(`base_model.model.model.layers.${f.cfg.numLayers - 1}.mlp.down_proj.lora_B.weight`);
    expect(names).toHaveLength(f.cfg.numLayers * MODULES.length * 2);
    session.dispose();
    f.weights.destroy();
  });

  // PEFT wraps each fused nn.Linear of Phi3ForCausalLM (target_modules qkv_proj, o_proj, gate_up_proj,
  // down_proj): lora_A [r, in_features], lora_B [out_features, r] (peft tuners/lora/layer.py). A Phi-3
  // model refuses the separate q_proj / gate_proj targets it does not have.
  it('Phi-3 (fused qkv_proj / gate_up_proj): SFT loss falls, and the PEFT export has the fused modules with their shapes', async () => {
    const ctx = await kernelContext();
    const f = await trainFixture(ctx, 'phi3', 'bf16', 43);
    const r = 8;
    const lora = loraConfig(['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'], r, 16);
    const { session, seqs, losses } = await sftFromFreshAdapter(f, lora, { seed: 2, dataSeed: 5, lengths: [28, 17], lr: 1e-2 });
    expect(losses[5]).toBeLessThan(0.5 * losses[0]);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);

    const adapter = await session.exportAdapter();
    const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F } = f.cfg;
    const want: Array<[string, number[]]> = [];
    for (let l = 0; l < f.cfg.numLayers; l++) {
      const p = `base_model.model.model.layers.${l}`;
      want.push(
        [`${p}.self_attn.qkv_proj.lora_A.weight`, [r, C]],
        [`${p}.self_attn.qkv_proj.lora_B.weight`, [(NH + 2 * NKV) * HS, r]],
        [`${p}.self_attn.o_proj.lora_A.weight`, [r, NH * HS]],
        [`${p}.self_attn.o_proj.lora_B.weight`, [C, r]],
        [`${p}.mlp.gate_up_proj.lora_A.weight`, [r, C]],
        [`${p}.mlp.gate_up_proj.lora_B.weight`, [2 * F, r]],
        [`${p}.mlp.down_proj.lora_A.weight`, [r, F]],
        [`${p}.mlp.down_proj.lora_B.weight`, [C, r]],
      );
    }
    const got = new Map(adapter.map((t) => [t.name, t.shape]));
    expect([...got.keys()].sort()).toEqual(want.map(([n]) => n).sort());
    for (const [name, shape] of want) expect(got.get(name), name).toEqual(shape);

    // The exported tensors are the trained model: the reference reads them as PEFT would.
    const after = await session.logprobs(seqs);
    const ref = referenceLogprobs(f.ref, lora, adapter, seqs);
    expectClose(
      after.flatMap((a) => Array.from(a)),
      ref.flatMap((a) => Array.from(a)),
      { atol: 3e-3, rtol: 3e-3 },
      'trained adapter logprobs',
    );
    expect(() => planLora(f.cfg, loraConfig(['q_proj', 'gate_proj']))).toThrow(/q_proj, gate_proj are not projections of this phi3 model/);
    session.dispose();
    f.weights.destroy();
  });
  it('the same inputs give bit-identical adapters; export + import with the optimizer state resumes exactly', async () => {
    const ctx = await kernelContext();
    const f = await trainFixture(ctx, 'llama', 'f16', 42, { microBatchTokens: 48 });
    const lora = loraConfig(['q_proj', 'k_proj', 'down_proj'], 4, 4);
    const rl: LossSpec = {
      kind: 'rl',
      ppo: false,
      epsilon: 1,
      epsilonHigh: 4,
      importanceSamplingLevel: 'sequence',
      maskProbRatio: false,
      kimiK2Tau: null,
      maxNegativeAdvantageImportanceSamplingWeight: null,
    };
    const steps = [
      { seqs: randomSequences(f.cfg.vocabSize, [20, 30, 11], 7, [0, 0, 1]), loss: rl },
      { seqs: randomSequences(f.cfg.vocabSize, [25, 9], 8), loss: { kind: 'sft' } as LossSpec },
      { seqs: randomSequences(f.cfg.vocabSize, [14, 14, 14], 9), loss: rl },
    ];
    const start = {
      lora,
      initialAdapter: null,
      optimizerState: null,
      optimizer: { ...OPTIMIZER, weightDecay: 0.1, maxGradNorm: 0.1 },
      seed: 5,
    };
    const run = async (from: number, session = f.engine.sessionFor(f.weights, start)) => {
      for (const s of steps.slice(from)) await session.step(s.seqs, s.loss, 1e-2);
      return session;
    };
    const a = await run(0);
    const b = await run(0);
    const bytes = async (s: typeof a) => (await s.exportAdapter()).map((t) => Array.from(t.data));
    const adapterA = await a.exportAdapter();
    expect(await bytes(b)).toEqual(adapterA.map((t) => Array.from(t.data)));
    // Something was learned: B is no longer zero.
    expect(adapterA.some((t) => t.name.endsWith('lora_B.weight') && tensorToF32(t).some((v) => v !== 0))).toBe(true);

    // Stop after one step, export, resume in a new session: the same adapter as the uninterrupted run.
    const first = f.engine.sessionFor(f.weights, start);
    await first.step(steps[0].seqs, steps[0].loss, 1e-2);
    const state = await first.exportOptimizerState();
    expect(state.step).toBe(1);
    expect(state.tensors.map((t) => t.name)).toContain('base_model.model.model.layers.1.mlp.down_proj.lora_A.weight.exp_avg_sq');
    const resumed = await run(
      1,
      f.engine.sessionFor(f.weights, { ...start, initialAdapter: await first.exportAdapter(), optimizerState: state }),
    );
    expect(await bytes(resumed)).toEqual(adapterA.map((t) => Array.from(t.data)));
    expect((await resumed.exportOptimizerState()).step).toBe(3);
    for (const s of [a, b, first, resumed]) s.dispose();
    f.weights.destroy();
  });
});
