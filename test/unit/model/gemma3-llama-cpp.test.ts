// Gemma 3 against llama.cpp: a random Gemma 3 checkpoint (gemma-3-270m's config format, 6 layers: five
// sliding with rope_local_base_freq, one global with rope_theta) runs in Hearth's reference forward and,
// written as a GGUF the way llama.cpp's convert_hf_to_gguf.py writes Gemma 3 (arch "gemma3", norm weights
// stored as 1 + w, tied embeddings), in llama.cpp (node-llama-cpp's CPU build). Every Gemma-specific
// step (the sqrt(C) embedding scale, x * (1 + w), sandwich norms, q/k norms, GeGLU with tanh GELU, the
// two RoPE bases) changes these logprobs if it is wrong. The prompt is shorter than the window, where
// sliding and full attention agree (longer contexts: the sliding-window work).
// llama.cpp computes f_attention_scale as 1/sqrt(head_dim) for Gemma 3 (all but 27B), so the fixture
// has query_pre_attn_scalar = head_dim as the real checkpoints do; the GPU tests cover a different one.
// The same file read by Hearth's GGUF loader (issue 11) is the safetensors model again, and a Gemma 3
// adapter exported as a GGUF LoRA moves llama.cpp's logits as it moves Hearth's.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { ggufLoraAdapter } from '../../../src/engine/model/gguf/gguf-lora';
import { readGguf } from '../../../src/engine/model/gguf/gguf-reader';
import { loadGgufModelFiles } from '../../../src/engine/model/gguf/gguf-repo';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { loraModulesOf } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors, referenceLora } from '../../../src/engine/reference/lora';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { gemma3Gguf, randomGemma3Tensors, tinyGemma3Config } from './gemma3-fixtures';
import { GOLDEN_PROMPT, goldenConfig, goldenTensors } from './gemma3-golden';
import { llamaCppOracle } from './llama-cpp';

const PROMPT = [2, 72, 101, 108, 108, 111, 256, 44, 257, 32, 119, 111, 114, 108, 100, 33];

/** log_softmax of one row. */
function logSoftmax(row: Float32Array): Float64Array {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
}

/** Relative RMS of (a - b) over the RMS of b. */
const relRms = (a: Float32Array, b: Float32Array) =>
  Math.sqrt(a.reduce((n, x, i) => n + (x - b[i]) ** 2, 0) / b.reduce((d, x) => d + x * x, 0));

describe('Gemma 3 against llama.cpp', () => {
  const llamaCpp = llamaCppOracle('hearth-gemma3-');
  const cfg = tinyGemma3Config();
  const tensors = randomGemma3Tensors(cfg, 'f32', 7);
  const gguf = gemma3Gguf(cfg, tensors);
  const V = cfg.vocabSize;

  it('gives the prompt logprobs llama.cpp gives on the same weights, also as loaded from the GGUF by Hearth', async () => {
    expect(cfg.layerTypes).toEqual([
      'sliding_attention',
      'sliding_attention',
      'sliding_attention',
      'sliding_attention',
      'sliding_attention',
      'full_attention',
    ]);
    const ours = new ReferenceModel(cfg, tensors).forward(PROMPT);
    const theirs = await llamaCpp.logits(gguf, 'gemma3.gguf', PROMPT, V);

    // Prompt logprobs: log p(token t+1 | tokens ..t), and the whole distribution at every position.
    let worst = 0;
    let worstRow = 0;
    for (let t = 0; t < PROMPT.length; t++) {
      const a1 = logSoftmax(ours.subarray(t * V, (t + 1) * V));
      const b1 = logSoftmax(theirs.subarray(t * V, (t + 1) * V));
      if (t + 1 < PROMPT.length) worst = Math.max(worst, Math.abs(a1[PROMPT[t + 1]] - b1[PROMPT[t + 1]]));
      for (let v = 0; v < V; v++) worstRow = Math.max(worstRow, Math.abs(a1[v] - b1[v]));
    }
    // They agree to 3.5e-3 nats (4.7e-3 over the whole vocabulary), and not closer with F32 weights:
    // llama.cpp's CPU build is as far from transformers itself (the golden-checkpoint test below).
    // Measured on this fixture, the sliding layers rotating with the global base moves them by 0.76,
    // GELU's sigmoid approximation by 0.03.
    expect(worst, 'largest prompt-logprob difference (nats)').toBeLessThan(5e-3);
    expect(worstRow, 'largest logprob difference over the vocabulary (nats)').toBeLessThan(6e-3);

    // Hearth's serving loader: the safetensors config, except that the file's norms already hold 1 + w
    // (and its epsilon is an f32, its ids are the tokenizer's, and a GGUF is never a multimodal checkpoint).
    const served = await loadGgufModelFiles(new FilesSource([new File([gguf as BlobPart], 'gemma3.gguf')]), ['gemma3.gguf']);
    const { multimodalCheckpoint: _, ...text } = cfg;
    const rmsNormEps = Math.fround(cfg.rmsNormEps);
    expect(served.config).toEqual({ ...text, rmsNormEps, normWeightOffset: 0, torchDtype: null, eosTokenIds: [V - 1] });
    const byName = new Map(tensors.map((t) => [t.name, t]));
    const loaded: TensorData[] = [];
    for await (const t of served.tensors()) {
      const hf = byName.get(t.name)!;
      expect(t.shape, t.name).toEqual(hf.shape);
      const want = tensorToF32(hf).map((w) => (t.name.endsWith('norm.weight') ? w + 1 : w));
      expect(new Float32Array(t.data.slice().buffer), t.name).toEqual(want);
      loaded.push({ ...t, dtype: 'f32' });
    }
    expect(loaded.map((t) => t.name).sort()).toEqual([...byName.keys()].sort());
    const fromGguf = new ReferenceModel(served.config, loaded).forward(PROMPT);
    expect(relRms(fromGguf, ours), 'the GGUF as loaded by Hearth vs the safetensors model').toBeLessThan(1e-5);
  }, 60_000);

  // Issue 11: the GGUF LoRA export of a Gemma 3 adapter, laid out as convert_lora_to_gguf.py writes one.
  it("llama.cpp with Hearth's exported GGUF LoRA adapter gives Hearth's logits with the adapter", async () => {
    const opts = { rank: 4, alpha: 8 };
    const peft = randomLoraTensors(cfg, opts.rank, loraModulesOf(cfg), 9);
    const adapter = ggufLoraAdapter(cfg, opts, peft);
    const file = await readGguf(memoryBytes(adapter), 'adapter.gguf');
    expect(file.metadata.get('general.architecture')?.value).toBe('gemma3');
    const dims: Record<string, [number, number]> = {
      attn_q: [cfg.hiddenSize, cfg.numHeads * cfg.headDim],
      attn_k: [cfg.hiddenSize, cfg.numKvHeads * cfg.headDim],
      attn_v: [cfg.hiddenSize, cfg.numKvHeads * cfg.headDim],
      attn_output: [cfg.numHeads * cfg.headDim, cfg.hiddenSize],
      ffn_gate: [cfg.hiddenSize, cfg.intermediateSize],
      ffn_up: [cfg.hiddenSize, cfg.intermediateSize],
      ffn_down: [cfg.intermediateSize, cfg.hiddenSize],
    };
    const want = Array.from({ length: cfg.numLayers }, (_, l) =>
      Object.entries(dims).flatMap(([w, [n, m]]) => [
        [`blk.${l}.${w}.weight.lora_a`, [n, opts.rank]],
        [`blk.${l}.${w}.weight.lora_b`, [opts.rank, m]],
      ]),
    ).flat();
    expect(Object.fromEntries(file.tensors.map((t) => [t.name, [...t.ne]]))).toEqual(Object.fromEntries(want));

    const reference = new ReferenceModel(cfg, tensors);
    const ours = reference.forward(PROMPT, undefined, referenceLora(cfg, opts, peft));
    const theirs = await llamaCpp.logits(gguf, 'gemma3-base.gguf', PROMPT, V, { gguf: adapter, file: 'gemma3-lora.gguf' });
    expect(relRms(reference.forward(PROMPT), ours), "the adapter's effect").toBeGreaterThan(0.5);
    expect(relRms(theirs, ours), 'llama.cpp vs Hearth with the adapter').toBeLessThan(2e-3); // measured 6.7e-4
  }, 60_000);
});

// Issue 21: the golden checkpoint (gemma-3-270m's per-layer shape, 40 tokens over a 16-token window,
// linear rope_scaling on the global layer; gemma3-golden.ts) as an F32 GGUF, in Hearth's GGUF loader and
// in llama.cpp, against transformers' numbers for the same weights (fixtures/gemma3-transformers.golden.json).
describe('Gemma 3 from a GGUF, against transformers and llama.cpp (golden checkpoint)', () => {
  const llamaCpp = llamaCppOracle('hearth-gemma3-golden-');
  const golden = JSON.parse(readFileSync(new URL('./fixtures/gemma3-transformers.golden.json', import.meta.url), 'utf8')) as {
    base: { prompt_logprobs: number[] };
  };
  const cfg = goldenConfig();
  const V = cfg.vocabSize;
  const tensors = goldenTensors();
  const gguf = gemma3Gguf(cfg, tensors);
  /** log p(prompt[t + 1] | ..t) at each position. */
  const promptLogprobs = (logits: Float32Array) =>
    GOLDEN_PROMPT.slice(1).map((tok, t) => logSoftmax(logits.subarray(t * V, (t + 1) * V))[tok]);
  const maxDiff = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, t) => Math.abs(x - b[t])));

  it("Hearth's GGUF route gives transformers' logprobs; llama.cpp is as far from transformers as from Hearth", async () => {
    const served = await loadGgufModelFiles(new FilesSource([new File([gguf as BlobPart], 'golden.gguf')]), ['golden.gguf']);
    expect(served.config.ropeScaling).toEqual(cfg.ropeScaling);
    const loaded: TensorData[] = [];
    for await (const t of served.tensors()) loaded.push(t);
    const hearth = promptLogprobs(new ReferenceModel(served.config, loaded).forward(GOLDEN_PROMPT));
    const transformers = golden.base.prompt_logprobs;
    expect(maxDiff(hearth, transformers), 'Hearth (from the GGUF) vs transformers (nats)').toBeLessThan(1e-4);

    // F32 weights and an F32 KV cache, and still llama.cpp's CPU build is 3.4e-3 nats from transformers
    // on this checkpoint (3.4e-4 at the first position). Its GELU reads an f16 table
    // (ggml_vec_geglu_f32), but that is a small part: rounding Hearth's GELU the same way moves the
    // fixture above only from 3.5e-3 to 3.1e-3 (and an f16 KV cache as little); the rest is inside
    // ggml, not found. Hearth sits where transformers does, so this bound is llama.cpp's own distance.
    const llama = promptLogprobs(await llamaCpp.logits(gguf, 'gemma3-golden.gguf', GOLDEN_PROMPT, V));
    expect(maxDiff(llama, hearth), 'llama.cpp vs Hearth (nats)').toBeLessThan(5e-3);
    expect(
      Math.abs(maxDiff(llama, transformers) - maxDiff(llama, hearth)),
      'llama.cpp vs transformers, minus llama.cpp vs Hearth',
    ).toBeLessThan(1e-4);
  }, 120_000);
});
