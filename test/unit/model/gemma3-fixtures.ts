// Tiny random Gemma 3 checkpoints in Gemma 3's exact config format: google/gemma-3-270m's config.json
// (fixtures/gemma-3-270m.config.json, as published) with only the sizes scaled down, parsed by the
// engine's own parseModelConfig, and seeded random weights whose norms are near 0 as Gemma stores
// them (its RMSNorm multiplies by 1 + w), and the same model as a GGUF the way llama.cpp's converter
// writes one. Shared by the unit (llama.cpp), GPU and training tests.
import { readFileSync } from 'node:fs';
import type { DType } from '../../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import { tensorFromF32, tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { gv, writeGguf, type GgufInput, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { layerNames, planParameters } from '../../../src/engine/model/weights/parameter-plan';
import { Rng } from '../../../src/engine/tensor/random';
import { EXTRA_TOKENS, MERGES } from './gguf-fixtures';

export const gemma3Fixture = (name: 'gemma-3-270m' | 'gemma-3-1b-it'): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}.config.json`, import.meta.url), 'utf8'));

/** gemma-3-270m's config.json with test-sized shapes (6 layers: 5 sliding, the 6th global). */
export function tinyGemma3Json(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const numLayers = (overrides.num_hidden_layers as number | undefined) ?? 6;
  return {
    ...gemma3Fixture('gemma-3-270m'),
    hidden_size: 96,
    intermediate_size: 160,
    num_hidden_layers: numLayers,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 32,
    query_pre_attn_scalar: 32,
    vocab_size: 264,
    sliding_window: 64,
    max_position_embeddings: 512,
    layer_types: Array.from({ length: numLayers }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention')),
    ...overrides,
  };
}

export function tinyGemma3Config(overrides: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig(tinyGemma3Json(overrides));
}

/** Seeded weights for every tensor of the plan: Linear ~ N(0, 1/in), embedding ~ N(0, 1/sqrt(C))
 *  (Gemma scales it back up by sqrt(C)), norms ~ N(0, 0.2) (the kernels apply 1 + w). */
export function randomGemma3Tensors(cfg: ModelConfig, dtype: DType, seed: number): TensorData[] {
  const rng = new Rng(seed);
  return planParameters(cfg).map(({ name, shape }) => {
    const n = shape.reduce((a, b) => a * b, 1);
    let values: Float32Array;
    if (name.endsWith('norm.weight')) values = rng.normals(n, 0.2);
    else if (name === 'model.embed_tokens.weight') values = rng.normals(n, 1 / Math.sqrt(cfg.hiddenSize));
    else values = rng.normals(n, 1 / Math.sqrt(shape[1]));
    return tensorFromF32(name, shape, values, dtype);
  });
}

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

/** A linear rope_scaling (4B and up) as convert_hf_to_gguf.py writes it. */
const linearRopeScaling = (a: string, factor: number): GgufInput['metadata'] => [
  [`${a}.rope.scaling.type`, gv.str('linear')],
  [`${a}.rope.scaling.factor`, gv.f32(factor)],
];

/** The model as convert_hf_to_gguf.py (Gemma3Model) writes it: F32, norm weights as w + 1, no output.weight (tied). */
export function gemma3Gguf(cfg: ModelConfig, tensors: readonly TensorData[]): Uint8Array {
  const { hiddenSize: C, numLayers, vocabSize: V } = cfg;
  const ggufTensors: GgufTensorInput[] = tensors.map((t) => {
    let values = tensorToF32(t);
    // convert_hf_to_gguf.py (Gemma3Model.modify_tensors): norm weights are written as w + 1.
    if (t.name.endsWith('norm.weight')) values = values.map((w) => w + 1);
    return { name: ggufName(t.name), ne: [...t.shape].reverse(), type: 'F32', data: new Uint8Array(values.buffer) };
  });
  // Byte tokens and a few merges, then unused ids up to the model's rows (llama.cpp takes n_vocab from the list).
  const tokens = [...BYTE_TO_CHAR, ...EXTRA_TOKENS];
  while (tokens.length < V) tokens.push(`<unused${tokens.length}>`);
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
      // convert_hf_to_gguf.py writes a linear rope_scaling (4B and up) as rope.scaling.type / factor.
      ...(cfg.ropeScaling?.type === 'linear' ? linearRopeScaling(a, cfg.ropeScaling.factor) : []),
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
