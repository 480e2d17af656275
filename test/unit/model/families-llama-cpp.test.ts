// Phi-3 and SmolLM3 against llama.cpp (node-llama-cpp's prebuilt CPU build) as an independent
// implementation: a random-weight model of each family, at test size but in the family's own
// layout, is written as an F32 GGUF the way convert_hf_to_gguf.py writes the family (Phi-3: fused
// `attn_qkv` and `ffn_up` [gate; up], n_rot = the rotated dims, `rope_factors_short/long`,
// `rope.scaling.original_context_length` and `rope.scaling.attn_factor`; SmolLM3: llama's names with
// q/k rows permuted for llama.cpp's interleaved RoPE), and Hearth's reference forward runs the HF
// tensors. Their logits at every prompt position must agree to f32 rounding.
//
// LongRoPE: llama.cpp picks the long factors for a whole context longer than the original length
// (llama_model::get_rope_factors), Hearth per position (model/config/rope.ts). Both are compared where they
// coincide: a context within the original length (short factors everywhere), and an original length
// of 1, where Hearth too uses the long factors from position 1 on (position 0 does not turn).
// SmolLM3: llama.cpp hard-codes a NoPE layer every 4th layer (src/models/smollm3.cpp,
// n_no_rope_layer_step = 4), the default no_rope_layers pattern, so the model has 4 layers.
// The same file read back by Hearth's GGUF loader alone (config from the metadata, names, LongRoPE
// tensors, un-permuted rows) must give llama.cpp's logits too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { ggufLoraAdapter } from '../../../src/engine/model/gguf/gguf-lora';
import { loadGgufModelFiles } from '../../../src/engine/model/gguf/gguf-repo';
import { permuteRows } from '../../../src/engine/model/gguf/gguf-model';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { FilesSource } from '../../../src/engine/model/sources/files-source';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { rotaryDim } from '../../../src/engine/model/config/rope';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { loraModulesOf } from '../../../src/engine/model/lora/peft-modules';
import { randomLoraTensors, referenceLora } from '../../../src/engine/reference/lora';
import { referenceTensorsFromGguf } from '../../../src/engine/reference/gguf-model';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { randomModelTensors } from '../../../src/engine/reference/random-model';
import { EXTRA_TOKENS, MERGES } from './gguf-fixtures';
import { compareLogits, llamaCppLogits } from './llama-cpp-oracle';

const PROMPT = [72, 101, 108, 108, 111, 256, 44, 257, 32, 119, 111, 114, 108, 100];
/** SmolLM3's byte-level BPE vocabulary (GPT-2 style, as its tokenizer). */
const BPE_VOCAB = [...BYTE_TO_CHAR, ...EXTRA_TOKENS];
/** Phi-3's SentencePiece vocabulary, as its GGUF files carry it: unk, bos, eos, the 256 byte pieces, a few more. */
const SPM_VOCAB = [
  '<unk>',
  '<s>',
  '</s>',
  ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`),
  '▁',
  '▁t',
  'he',
  '<|end|>',
  '<|endoftext|>',
];
// Token types: 2 unk, 3 control, 6 byte, 1 normal.
const SPM_TYPES = SPM_VOCAB.map((t, i) => (i === 0 ? 2 : i < 3 || t.startsWith('<|') ? 3 : i < 259 ? 6 : 1));

function tokenizerMetadata(arch: 'phi3' | 'smollm3'): Array<[string, ReturnType<typeof gv.u32>]> {
  if (arch === 'phi3') {
    return [
      ['tokenizer.ggml.model', gv.str('llama')],
      ['tokenizer.ggml.tokens', gv.strs(SPM_VOCAB)],
      ['tokenizer.ggml.scores', gv.f32s(SPM_VOCAB.map(() => 0))],
      ['tokenizer.ggml.token_type', gv.i32s(SPM_TYPES)],
      ['tokenizer.ggml.bos_token_id', gv.u32(1)],
      ['tokenizer.ggml.eos_token_id', gv.u32(SPM_VOCAB.indexOf('<|end|>'))],
      ['tokenizer.ggml.unknown_token_id', gv.u32(0)],
      ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ];
  }
  return [
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str('qwen2')],
    ['tokenizer.ggml.tokens', gv.strs(BPE_VOCAB)],
    ['tokenizer.ggml.token_type', gv.i32s(BPE_VOCAB.map((t) => (t.startsWith('<|') ? 3 : 1)))],
    ['tokenizer.ggml.merges', gv.strs(MERGES)],
    ['tokenizer.ggml.eos_token_id', gv.u32(BPE_VOCAB.length - 1)],
    ['tokenizer.ggml.add_bos_token', gv.bool(false)],
  ];
}

/** A Phi-3 config.json at test size, in Phi-3.5-mini's format (longrope, partial rotary as Phi-4-mini). */
function phi3Json(original: number, maxPositions: number, attentionFactor?: number) {
  return {
    architectures: ['Phi3ForCausalLM'],
    model_type: 'phi3',
    hidden_size: 64,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: SPM_VOCAB.length,
    max_position_embeddings: maxPositions,
    original_max_position_embeddings: original,
    partial_rotary_factor: 0.75,
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    rope_scaling: {
      type: 'longrope',
      short_factor: [1.0, 1.1, 1.25, 1.5, 2.0, 3.0],
      long_factor: [1.0, 1.8, 3.5, 7.0, 12.0, 20.0],
      ...(attentionFactor ? { attention_factor: attentionFactor } : {}),
    },
    sliding_window: 262144,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
    eos_token_id: SPM_VOCAB.indexOf('<|end|>'),
  };
}

const SMOLLM3_JSON = {
  architectures: ['SmolLM3ForCausalLM'],
  model_type: 'smollm3',
  hidden_size: 64,
  intermediate_size: 96,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: BPE_VOCAB.length,
  max_position_embeddings: 512,
  rms_norm_eps: 1e-6,
  rope_theta: 5000000.0,
  no_rope_layers: [1, 1, 1, 0],
  no_rope_layer_interval: 4,
  use_sliding_window: false,
  sliding_window: null,
  attention_bias: false,
  mlp_bias: false,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  eos_token_id: BPE_VOCAB.length - 1,
};

/** The HF tensors as llama.cpp's converter writes them for the family (F32). */
function familyGguf(cfg: ModelConfig, tensors: TensorData[], arch: 'phi3' | 'smollm3'): Uint8Array {
  const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F } = cfg;
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const out: GgufTensorInput[] = [];
  const put = (gguf: string, hf: string, permuteHeads = 0) => {
    const t = byName.get(hf)!;
    const data = new Uint8Array(tensorToF32(t).buffer);
    out.push({ name: gguf, ne: [...t.shape].reverse(), type: 'F32', data: permuteHeads ? permuteRows(data, permuteHeads, HS) : data });
  };
  put('token_embd.weight', 'model.embed_tokens.weight');
  for (let l = 0; l < cfg.numLayers; l++) {
    const [b, p] = [`blk.${l}`, `model.layers.${l}`];
    put(`${b}.attn_norm.weight`, `${p}.input_layernorm.weight`);
    if (arch === 'phi3') {
      put(`${b}.attn_qkv.weight`, `${p}.self_attn.qkv_proj.weight`);
      put(`${b}.ffn_up.weight`, `${p}.mlp.gate_up_proj.weight`);
    } else {
      put(`${b}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, NH);
      put(`${b}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, NKV);
      put(`${b}.attn_v.weight`, `${p}.self_attn.v_proj.weight`);
      put(`${b}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`);
      put(`${b}.ffn_up.weight`, `${p}.mlp.up_proj.weight`);
    }
    put(`${b}.attn_output.weight`, `${p}.self_attn.o_proj.weight`);
    put(`${b}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`);
    put(`${b}.ffn_down.weight`, `${p}.mlp.down_proj.weight`);
  }
  put('output_norm.weight', 'model.norm.weight');
  put('output.weight', cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
  const rope: Array<[string, ReturnType<typeof gv.u32>]> = [];
  const s = cfg.ropeScaling;
  if (s?.type === 'longrope') {
    for (const [name, f] of [
      ['rope_factors_long.weight', s.longFactor],
      ['rope_factors_short.weight', s.shortFactor],
    ] as const) {
      out.push({ name, ne: [f.length], type: 'F32', data: new Uint8Array(Float32Array.from(f).buffer) });
    }
    rope.push([`${arch}.rope.scaling.original_context_length`, gv.u32(s.originalMaxPositionEmbeddings)]);
    rope.push([`${arch}.rope.scaling.attn_factor`, gv.f32(s.attentionFactor)]);
  }
  return writeGguf({
    metadata: [
      ['general.architecture', gv.str(arch)],
      ['general.name', gv.str(`hearth-${arch}-test`)],
      [`${arch}.block_count`, gv.u32(cfg.numLayers)],
      [`${arch}.context_length`, gv.u32(cfg.maxPositionEmbeddings)],
      [`${arch}.embedding_length`, gv.u32(C)],
      [`${arch}.feed_forward_length`, gv.u32(F)],
      [`${arch}.attention.head_count`, gv.u32(NH)],
      [`${arch}.attention.head_count_kv`, gv.u32(NKV)],
      [`${arch}.attention.layer_norm_rms_epsilon`, gv.f32(cfg.rmsNormEps)],
      [`${arch}.rope.freq_base`, gv.f32(cfg.ropeTheta)],
      [`${arch}.rope.dimension_count`, gv.u32(rotaryDim(cfg))],
      ...rope,
      ...tokenizerMetadata(arch),
    ],
    tensors: out,
  });
}

describe('Phi-3 and SmolLM3 against llama.cpp', () => {
  let llama: Llama;
  let dir: string;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
    dir = mkdtempSync(join(tmpdir(), 'hearth-families-'));
  });
  afterAll(async () => {
    await llama?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    // llama.cpp pads a context to 256 tokens, so the original length is 512 here (and the attention
    // factor, sqrt(1 + ln 8 / ln 512), derived from max / original as transformers does).
    ['Phi-3, context within original_max_position_embeddings: short factors', 'phi3', phi3Json(512, 4096), 32],
    ['Phi-3, original length 1: long factors', 'phi3', phi3Json(1, 512, 1.19), 64],
    ['SmolLM3, NoPE on layer 3', 'smollm3', SMOLLM3_JSON, 32],
  ] as const)(
    '%s: the same logits as llama.cpp at every position',
    async (label, arch, json, contextSize) => {
      const cfg = parseModelConfig(json);
      const tensors = randomModelTensors(cfg, 'f32', 77);
      const path = join(dir, `${arch}-${contextSize}.gguf`);
      const gguf = familyGguf(cfg, tensors, arch);
      writeFileSync(path, gguf);
      const theirs = await llamaCppLogits(llama, path, PROMPT, cfg.vocabSize, contextSize);
      const relRms = (ours: Float32Array) => compareLogits(ours, theirs, cfg.vocabSize).rel;
      expect(relRms(new ReferenceModel(cfg, tensors).forward(PROMPT)), `${label}: relative RMS difference of the logits`).toBeLessThan(
        3e-3,
      );

      const loaded = await referenceTensorsFromGguf(memoryBytes(gguf), `${arch}.gguf`);
      const family = (c: ModelConfig) => [c.arch, c.rotaryDim, c.ropeLayers, c.fusedProjections, c.slidingWindow, c.layerTypes];
      expect(family(loaded.config)).toEqual(family(cfg));
      expect(loaded.config.ropeScaling?.type).toBe(cfg.ropeScaling?.type);
      // The serving loader reads the same config, and its tensor table fits the engine's plan for the family.
      const served = await loadGgufModelFiles(new FilesSource([new File([gguf as BlobPart], `${arch}.gguf`)]), [`${arch}.gguf`]);
      expect(served.config).toEqual(loaded.config);
      expect(served.weights.map((w) => w.name).sort()).toEqual(loaded.tensors.map((t) => t.name).sort());
      const fromGguf = new ReferenceModel(loaded.config, loaded.tensors).forward(PROMPT);
      expect(relRms(fromGguf), `${label}: relative RMS difference of the logits, model loaded from the GGUF`).toBeLessThan(3e-3);
    },
    60_000,
  );

  // Issue 11: Hearth's GGUF LoRA export on these layouts: Phi-3's fused modules land on attn_qkv and
  // ffn_up, SmolLM3's B rows for q/k are permuted like its base weights. llama.cpp with the adapter
  // must give Hearth's logits with the PEFT adapter (which moves them by far more than the bound).
  it.each([
    ['phi3', phi3Json(512, 4096)],
    ['smollm3', SMOLLM3_JSON],
  ] as const)(
    "%s: llama.cpp with Hearth's exported GGUF LoRA adapter gives Hearth's logits with the adapter",
    async (arch, json) => {
      const cfg = parseModelConfig(json);
      const tensors = randomModelTensors(cfg, 'f32', 78);
      const opts = { rank: 4, alpha: 8 };
      const peft = randomLoraTensors(cfg, opts.rank, loraModulesOf(cfg), 79);
      const [modelPath, loraPath] = [join(dir, `${arch}-base.gguf`), join(dir, `${arch}-lora.gguf`)];
      writeFileSync(modelPath, familyGguf(cfg, tensors, arch));
      writeFileSync(loraPath, ggufLoraAdapter(cfg, opts, peft));
      const reference = new ReferenceModel(cfg, tensors);
      const ours = reference.forward(PROMPT, undefined, referenceLora(cfg, opts, peft));
      const theirs = await llamaCppLogits(llama, modelPath, PROMPT, cfg.vocabSize, 32, loraPath);
      const rel = (a: Float32Array, b: Float32Array) =>
        Math.sqrt(a.reduce((n, x, i) => n + (x - b[i]) ** 2, 0) / b.reduce((d, x) => d + x * x, 0));
      expect(rel(reference.forward(PROMPT), ours), `${arch}: the adapter's effect`).toBeGreaterThan(0.5);
      expect(rel(theirs, ours), `${arch}: llama.cpp vs Hearth with the adapter`).toBeLessThan(5e-3);
    },
    60_000,
  );
});
