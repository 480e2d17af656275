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
import { describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR } from '../../../src/engine/model/byte-level';
import { tensorToF32 } from '../../../src/engine/model/dtype';
import type { ModelConfig } from '../../../src/engine/model/config';
import { ggufLoraAdapter } from '../../../src/engine/model/gguf/gguf-lora';
import { readGguf } from '../../../src/engine/model/gguf/gguf-reader';
import { loadGgufModelFiles } from '../../../src/engine/model/gguf/gguf-repo';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes } from '../../../src/engine/model/safetensors';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import type { TensorData } from '../../../src/engine/model/tensor';
import { loraModulesOf, randomLoraTensors, referenceLora } from '../../../src/engine/reference/lora';
import { layerNames } from '../../../src/engine/model/weights';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { EXTRA_TOKENS, MERGES } from './gguf-fixtures';
import { randomGemma3Tensors, tinyGemma3Config } from './gemma3-fixtures';
import { llamaCppOracle } from './llama-cpp';

const PROMPT = [2, 72, 101, 108, 108, 111, 256, 44, 257, 32, 119, 111, 114, 108, 100, 33];

/** HF name -> llama.cpp's gemma3 tensor name (llama-arch.cpp LLM_ARCH_GEMMA3). */
function ggufName(name: string): string {
  if (name === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (name === 'model.norm.weight') return 'output_norm.weight';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name)!;
  const n = layerNames(0);
  const local = `model.layers.0.${m[2]}`;
  const table: Record<string, string> = {
    [n.inputNorm]: 'attn_norm',
    [n.q]: 'attn_q',
    [n.k]: 'attn_k',
    [n.v]: 'attn_v',
    [n.qNorm]: 'attn_q_norm',
    [n.kNorm]: 'attn_k_norm',
    [n.o]: 'attn_output',
    [n.postNorm]: 'post_attention_norm',
    [n.preFfnNorm]: 'ffn_norm',
    [n.gate]: 'ffn_gate',
    [n.up]: 'ffn_up',
    [n.down]: 'ffn_down',
    [n.postFfnNorm]: 'post_ffw_norm',
  };
  return `blk.${m[1]}.${table[local]}.weight`;
}

/** log_softmax of one row. */
function logSoftmax(row: Float32Array): Float64Array {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
}

/** The model as convert_hf_to_gguf.py (Gemma3Model) writes it: F32, norm weights as w + 1, no output.weight (tied). */
function gemma3Gguf(cfg: ModelConfig, tensors: readonly TensorData[]): Uint8Array {
  const { hiddenSize: C, numLayers, vocabSize: V } = cfg;
  const ggufTensors: GgufTensorInput[] = tensors.map((t) => {
    let values = tensorToF32(t);
    // convert_hf_to_gguf.py (Gemma3Model.modify_tensors): norm weights are written as w + 1.
    if (t.name.endsWith('norm.weight')) values = values.map((w) => w + 1);
    return { name: ggufName(t.name), ne: [...t.shape].reverse(), type: 'F32', data: new Uint8Array(values.buffer) };
  });
  const tokens = [...BYTE_TO_CHAR, ...EXTRA_TOKENS];
  const a = 'gemma3';
  return writeGguf({
    metadata: [
      ['general.architecture', gv.str(a)],
      ['general.name', gv.str('hearth-gemma3-test')],
      [`${a}.block_count`, gv.u32(numLayers)],
      [`${a}.context_length`, gv.u32(cfg.maxPositionEmbeddings)],
      [`${a}.embedding_length`, gv.u32(C)],
      [`${a}.feed_forward_length`, gv.u32(cfg.intermediateSize)],
      [`${a}.attention.head_count`, gv.u32(cfg.numHeads)],
      [`${a}.attention.head_count_kv`, gv.u32(cfg.numKvHeads)],
      [`${a}.attention.key_length`, gv.u32(cfg.headDim)],
      [`${a}.attention.value_length`, gv.u32(cfg.headDim)],
      [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(cfg.rmsNormEps)],
      [`${a}.attention.sliding_window`, gv.u32(cfg.slidingWindow!)],
      [`${a}.rope.freq_base`, gv.f32(cfg.ropeTheta)],
      [`${a}.rope.freq_base_swa`, gv.f32(cfg.ropeLocalTheta!)],
      ['tokenizer.ggml.model', gv.str('gpt2')],
      ['tokenizer.ggml.pre', gv.str('default')],
      ['tokenizer.ggml.tokens', gv.strs(tokens)],
      ['tokenizer.ggml.token_type', gv.i32s(tokens.map((t) => (t.startsWith('<|') ? 3 : 1)))],
      ['tokenizer.ggml.merges', gv.strs(MERGES)],
      ['tokenizer.ggml.bos_token_id', gv.u32(cfg.bosTokenId!)],
      ['tokenizer.ggml.eos_token_id', gv.u32(V - 1)],
      ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ],
    tensors: ggufTensors,
  });
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
    // They agree to ~4e-3 nats: ggml's CPU GELU reads a table at f16 inputs. Measured on this fixture,
    // the sliding layers rotating with the global base moves them by 0.76, GELU's sigmoid approximation by 0.03.
    expect(worst, 'largest prompt-logprob difference (nats)').toBeLessThan(1e-2);
    expect(worstRow, 'largest logprob difference over the vocabulary (nats)').toBeLessThan(1.5e-2);

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
    expect(relRms(theirs, ours), 'llama.cpp vs Hearth with the adapter').toBeLessThan(1e-2);
  }, 60_000);
});
