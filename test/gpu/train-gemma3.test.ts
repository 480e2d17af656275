// LoRA training of Gemma 3 on the GPU (gemma-3-270m's config format, test-sized): the training
// forward's logprobs against the reference forward with the same adapter (sandwich norms, GeGLU,
// scaled embeddings, q/k norms with the folded query_pre_attn_scalar, two RoPE bases); the SFT
// gradients of every LoRA module against the reference trainer, with saved and with recomputed
// activations; then SFT steps from a fresh PEFT adapter make the loss fall, and the exported
// adapter's names and shapes are PEFT's for Gemma3ForCausalLM. The same model as a GGUF (norms stored
// as 1 + w, loaded by loadGgufModelFiles) gives the safetensors model's logprobs and gradients.
import { afterAll, describe, expect, it } from 'vitest';
import { loadGgufModelFiles } from '../../src/engine/model/gguf/gguf-repo';
import { FilesSource } from '../../src/engine/model/sources/files-source';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { WeightSet } from '../../src/engine/model/weights/weight-set';
import { expectClose } from '../../src/engine/reference/check';
import { loraModuleDims, parseLoraTensorName, type LoraModule } from '../../src/engine/model/lora/peft-modules';
import { randomLoraTensors } from '../../src/engine/reference/lora';
import { ReferenceModel } from '../../src/engine/reference/model';
import { GpuTrainingEngine } from '../../src/engine/train/engine';
import { planLora } from '../../src/engine/train/lora-plan';
import { destroyContexts, kernelContext } from './dense-helpers';
import { loraConfig, maxAbs, OPTIMIZER, randomSequences, referenceLogprobs, referenceStep } from './train-helpers';
import { gemma3Gguf, randomGemma3Tensors, tinyGemma3Config } from '../unit/model/gemma3-fixtures';

afterAll(destroyContexts);

const ALL: LoraModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const flat = (a: Float32Array[]) => a.flatMap((x) => Array.from(x));

async function gemmaFixture(mode: 'save' | 'recompute') {
  const ctx = await kernelContext();
  // query_pre_attn_scalar != head_dim: the scale folded into q_norm must survive the backward too.
  const cfg = tinyGemma3Config({ query_pre_attn_scalar: 24 });
  const tensors = randomGemma3Tensors(cfg, 'f32', 90);
  const weights = await WeightSet.upload(ctx.device, cfg, tensors, { ropePositions: 64 });
  const engine = new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {}, activationMode: mode });
  return { cfg, weights, engine, ref: new ReferenceModel(cfg, tensors) };
}

describe('Gemma 3 LoRA training', () => {
  it('logprobs and SFT gradients of every module match the reference (saved and recomputed activations)', async () => {
    const lora = loraConfig(ALL);
    const adapter = randomLoraTensors(tinyGemma3Config(), lora.rank, ALL, 17, 'f32', 0.5);
    for (const mode of ['save', 'recompute'] as const) {
      const f = await gemmaFixture(mode);
      const seqs = randomSequences(f.cfg.vocabSize, [19, 11], 21).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
      const session = f.engine.sessionFor(f.weights, {
        lora,
        initialAdapter: adapter,
        optimizerState: null,
        optimizer: OPTIMIZER,
        seed: 1,
      });
      expectClose(
        flat(await session.logprobs(seqs)),
        flat(referenceLogprobs(f.ref, lora, adapter, seqs)),
        { atol: 2e-3, rtol: 2e-3 },
        `${mode} logprobs`,
      );
      await session.step(seqs, { kind: 'sft' }, 0);
      const grads = await session.gradients();

      // Every LoRA gradient against the reference trainer (itself checked by finite differences in
      // test/unit/reference/finite-diff-model.test.ts).
      const ref = referenceStep(f.ref, planLora(f.cfg, lora), adapter, seqs, { kind: 'sft' });
      const scale = maxAbs(ref.grads);
      expect(scale).toBeGreaterThan(0);
      expectClose(grads, ref.grads, { atol: 2e-3 * scale, rtol: 2e-2 }, `${mode} LoRA gradients`);
      session.dispose();
      f.weights.destroy();
    }
  });

  it('SFT from a fresh adapter makes the loss fall; the export has PEFT names and shapes', async () => {
    const f = await gemmaFixture('save');
    const lora = loraConfig(ALL, 8, 16);
    const session = f.engine.sessionFor(f.weights, { lora, initialAdapter: null, optimizerState: null, optimizer: OPTIMIZER, seed: 2 });
    const seqs = randomSequences(f.cfg.vocabSize, [24, 17], 3).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
    const losses: number[] = [];
    for (let i = 0; i < 6; i++) losses.push((await session.step(seqs, { kind: 'sft' }, 3e-2)).loss);
    expect(losses[5]).toBeLessThan(0.5 * losses[0]);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);

    // PEFT's names for Gemma3ForCausalLM: base_model.model.model.layers.N.{self_attn,mlp}.X.lora_{A,B}.weight,
    // A [r, in], B [out, r], with Gemma's q (NH HS = 128) wider than its hidden size (96).
    const exported = await session.exportAdapter();
    expect(exported.length).toBe(f.cfg.numLayers * ALL.length * 2);
    const q = exported.find((t) => t.name === 'base_model.model.model.layers.5.self_attn.q_proj.lora_B.weight')!;
    expect(q.shape).toEqual([4 * 32, 8]);
    const down = exported.find((t) => t.name === 'base_model.model.model.layers.0.mlp.down_proj.lora_A.weight')!;
    expect(down.shape).toEqual([8, 160]);
    for (const t of exported) {
      const key = parseLoraTensorName(t.name)!;
      const d = loraModuleDims(f.cfg, key.module);
      expect(t.shape).toEqual(key.which === 'A' ? [8, d.in] : [d.out, 8]);
    }
    // The trained adapter is what the reference sees through those tensors.
    expectClose(
      flat(await session.logprobs(seqs)),
      flat(referenceLogprobs(f.ref, lora, exported, seqs)),
      { atol: 3e-3, rtol: 3e-3 },
      'trained adapter',
    );
    session.dispose();
    f.weights.destroy();
  });

  it('a Gemma 3 GGUF trains as its safetensors original: the same logprobs and LoRA gradients', async () => {
    const ctx = await kernelContext();
    const cfg = tinyGemma3Config();
    const tensors = randomGemma3Tensors(cfg, 'f32', 91);
    const bytes = gemma3Gguf(cfg, tensors);
    const served = await loadGgufModelFiles(new FilesSource([new File([bytes as BlobPart], 'g.gguf')]), ['g.gguf']);
    const fromGguf: TensorData[] = [];
    for await (const t of served.tensors()) fromGguf.push({ ...t, dtype: 'f32' });
    const weights = await WeightSet.upload(ctx.device, served.config, fromGguf, { ropePositions: 64 });
    const engine = new GpuTrainingEngine({ kernelContext: ctx, weights: async () => weights, log: () => {}, activationMode: 'save' });
    const lora = loraConfig(ALL);
    const adapter = randomLoraTensors(cfg, lora.rank, ALL, 18, 'f32', 0.5);
    const session = engine.sessionFor(weights, { lora, initialAdapter: adapter, optimizerState: null, optimizer: OPTIMIZER, seed: 1 });
    const seqs = randomSequences(cfg.vocabSize, [13, 9], 22).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
    const ref = new ReferenceModel(cfg, tensors);
    expectClose(
      flat(await session.logprobs(seqs)),
      flat(referenceLogprobs(ref, lora, adapter, seqs)),
      { atol: 2e-3, rtol: 2e-3 },
      'logprobs',
    );
    await session.step(seqs, { kind: 'sft' }, 0);
    const want = referenceStep(ref, planLora(cfg, lora), adapter, seqs, { kind: 'sft' });
    expectClose(await session.gradients(), want.grads, { atol: 2e-3 * maxAbs(want.grads), rtol: 2e-2 }, 'LoRA gradients');
    session.dispose();
    weights.destroy();
  });
});
