/**
 * A GGUF file as a Hearth model: its metadata as a ModelConfig, its tensor names as the HF names
 * the engine plans by, and llama's rotary permutation undone.
 *
 * - Config keys are llama.cpp's (src/llama-arch.cpp `LLM_KV_*`, read per architecture as
 *   `{arch}.embedding_length` and so on); a missing required key is an error naming the key.
 * - Names (llama-arch.cpp `LLM_TENSOR_NAMES`): `token_embd` -> `model.embed_tokens`,
 *   `blk.N.attn_q` -> `model.layers.N.self_attn.q_proj`, `ffn_norm` -> `post_attention_layernorm`...
 * - llama.cpp's converter permutes the rows of llama's q/k projections (convert_hf_to_gguf.py
 *   `LlamaModel.permute`) so its interleaved RoPE equals HF's rotate-half RoPE; Hearth applies
 *   rotate-half, so the rows are put back. Rows are whole blocks, so this works on quantized data.
 *   Qwen2/Qwen3 files are not permuted (llama.cpp runs them with NEOX RoPE).
 * - Llama 3's frequency scaling comes as the tensor `rope_freqs.weight` (one divisor per frequency).
 * - Phi-3, SmolLM3 and Mistral's sliding window: gguf-families.ts; Gemma 3: gguf-gemma3.ts.
 *
 * Not here: parsing (gguf-reader.ts), block formats (model/quant/dequant.ts), the tokenizer.
 */
import type { Architecture, ModelConfig, RopeScaling } from '../config/model-config';
import type { ByteSource } from '../files/safetensors';
import { ggmlBytes } from '../../tensor/ggml-types';
import { FAMILY_LAYER_NAMES, ggufFamilyConfig, ggufRopeScaling, PERMUTED_QK } from './gguf-families';
import { GgufError, ggufValue, readGgufTensor, type GgufFile, type GgufTensorInfo } from './gguf-reader';

const ARCHITECTURES: readonly Architecture[] = ['llama', 'qwen2', 'qwen3', 'phi3', 'smollm3', 'gemma3'];

/** GGUF tensor name suffix (after `blk.N.`) -> HF name suffix (after `model.layers.N.`). */
export const LAYER_NAMES: Readonly<Record<string, string>> = {
  attn_norm: 'input_layernorm',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  ffn_norm: 'post_attention_layernorm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
};
const GLOBAL_NAMES: Readonly<Record<string, string>> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};
/** The HF name of a GGUF tensor of an `arch` model, or null for one Hearth does not know. */
export function hfTensorName(gguf: string, arch?: Architecture): string | null {
  if (GLOBAL_NAMES[gguf]) return GLOBAL_NAMES[gguf];
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(gguf);
  const suffix = m && ((arch && FAMILY_LAYER_NAMES[arch]?.[m[2]]) || LAYER_NAMES[m[2]]);
  if (!suffix) return null;
  return `model.layers.${m[1]}.${suffix}.${m[3]}`;
}

/** The GGUF name llama.cpp's converter gives the HF tensor `hf` (the names shared by every family), or null. */
export function ggufTensorName(hf: string): string | null {
  const global = Object.entries(GLOBAL_NAMES).find(([, h]) => h === hf);
  if (global) return global[0];
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hf);
  const suffix = m && Object.entries(LAYER_NAMES).find(([, h]) => h === m[2])?.[0];
  return suffix ? `blk.${m[1]}.${suffix}.${m[3]}` : null;
}

function num(file: GgufFile, key: string, name: string, fallback?: number): number {
  const v = ggufValue(file, key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new GgufError(`${name}: metadata key ${key} is missing`);
  }
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
    throw new GgufError(`${name}: metadata key ${key} must be a positive number`);
  return v;
}

/** `general.architecture`, when Hearth runs it (metadata only: checked before a split model's other parts are fetched). */
export function ggufArchitecture(file: GgufFile, name = 'model.gguf'): Architecture {
  const arch = ggufValue(file, 'general.architecture');
  if (typeof arch !== 'string') throw new GgufError(`${name}: metadata key general.architecture is missing`);
  if (!ARCHITECTURES.includes(arch as Architecture)) {
    throw new GgufError(`${name}: architecture ${arch} is not supported (supported: ${ARCHITECTURES.join(', ')})`);
  }
  return arch as Architecture;
}

/** The engine's ModelConfig from a GGUF's metadata and tensor table. */
export function ggufModelConfig(file: GgufFile, name = 'model.gguf'): ModelConfig {
  const a = ggufArchitecture(file, name);
  const k = (key: string, fallback?: number) => num(file, `${a}.${key}`, name, fallback);
  const hiddenSize = k('embedding_length');
  const numHeads = k('attention.head_count');
  const tokens = ggufValue(file, 'tokenizer.ggml.tokens');
  const embd = file.tensors.find((t) => t.name === 'token_embd.weight');
  if (!embd) throw new GgufError(`${name}: tensor token_embd.weight is missing`);
  const has = (t: string) => file.tensors.some((x) => x.name === t);
  const eos = ['tokenizer.ggml.eos_token_id', 'tokenizer.ggml.eot_token_id', 'tokenizer.ggml.eom_token_id']
    .map((key) => ggufValue(file, key))
    .filter((v): v is number => typeof v === 'number');
  const bos = ggufValue(file, 'tokenizer.ggml.bos_token_id');
  const scalingType = ggufValue(file, `${a}.rope.scaling.type`);
  const factor = ggufValue(file, `${a}.rope.scaling.factor`);
  const numLayers = k('block_count');
  const headDim = k('attention.key_length', hiddenSize / numHeads);
  const maxPositionEmbeddings = k('context_length');
  // Each layer needs tensors of its own: more layers than tensors is a hostile count, refused before any per-layer work.
  if (!Number.isInteger(numLayers) || numLayers > file.tensors.length) {
    throw new GgufError(`${name}: metadata key ${a}.block_count (${numLayers}) does not fit the ${file.tensors.length} tensors`);
  }
  return {
    arch: a,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads: k('attention.head_count_kv', numHeads),
    headDim,
    intermediateSize: k('feed_forward_length'),
    vocabSize: k('vocab_size', Array.isArray(tokens) ? tokens.length : embd.ne[1]),
    rmsNormEps: k('attention.layer_norm_rms_epsilon'),
    ropeTheta: k('rope.freq_base', 10000),
    ropeScaling: scalingType === 'linear' && typeof factor === 'number' && factor !== 1 ? { type: 'linear', factor } : null,
    ...ggufFamilyConfig(file, a, k, name, { numLayers, hiddenSize, numHeads, headDim, maxPositionEmbeddings }),
    maxPositionEmbeddings,
    tieWordEmbeddings: !has('output.weight'),
    attentionBias: has('blk.0.attn_q.bias'),
    outputBias: has('blk.0.attn_output.bias'),
    mlpBias: has('blk.0.ffn_up.bias'),
    qkNorm: has('blk.0.attn_q_norm.weight'),
    bosTokenId: typeof bos === 'number' ? bos : null,
    eosTokenIds: [...new Set(eos)],
    torchDtype: null,
  };
}

/**
 * llama.cpp's converter permutes the rows of llama's q/k projections (convert_hf_to_gguf.py
 * `LlamaModel.permute`): HF row h*HS + i*HS/2 + j is GGUF row h*HS + 2j + i (i in {0, 1}, j < HS/2).
 * Both directions work on any row-major rows of `rowBytes` bytes (quantized ones too); rowBytes
 * defaults to the data split into heads * headDim rows.
 */
export function permuteRows(data: Uint8Array, heads: number, headDim: number, rowBytes?: number): Uint8Array {
  return moveRows(data, heads, headDim, rowBytes, 'to-gguf');
}

/** Undoes permuteRows: GGUF row order back to HF's. */
export function unpermuteRows(data: Uint8Array, heads: number, headDim: number, rowBytes?: number): Uint8Array {
  return moveRows(data, heads, headDim, rowBytes, 'to-hf');
}

function moveRows(
  data: Uint8Array,
  heads: number,
  headDim: number,
  rowBytes = data.length / (heads * headDim),
  to: 'to-gguf' | 'to-hf',
): Uint8Array {
  if (data.length !== heads * headDim * rowBytes || !Number.isInteger(rowBytes))
    throw new Error(`permuteRows: ${data.length} bytes for ${heads} x ${headDim} rows of ${rowBytes}`);
  const out = new Uint8Array(data.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let i = 0; i < 2; i++) {
        const hf = (h * headDim + i * half + j) * rowBytes;
        const gguf = (h * headDim + 2 * j + i) * rowBytes;
        const [from, at] = to === 'to-gguf' ? [hf, gguf] : [gguf, hf];
        out.set(data.subarray(from, from + rowBytes), at);
      }
    }
  }
  return out;
}

/** One tensor's stored blocks in the HF layout (llama q/k rows un-permuted), with its HF name. */
export async function readHfTensor(
  src: ByteSource,
  t: GgufTensorInfo,
  cfg: ModelConfig,
): Promise<{ name: string; shape: number[]; type: string; data: Uint8Array }> {
  const name = hfTensorName(t.name, cfg.arch);
  if (!name) throw new GgufError(`tensor ${t.name} has no Hugging Face counterpart`);
  let data = await readGgufTensor(src, t);
  // A weight's rows are ne[0] elements; a bias's "rows" are its single elements.
  const rowBytes = t.ne.length === 1 ? t.type.typeSize : ggmlBytes(t.type, t.ne[0]);
  if (PERMUTED_QK.includes(cfg.arch) && /\.self_attn\.[qk]_proj\.(weight|bias)$/.test(name)) {
    const heads = name.includes('.q_proj') ? cfg.numHeads : cfg.numKvHeads;
    data = unpermuteRows(data, heads, cfg.headDim, rowBytes);
  }
  return { name, shape: [...t.ne].reverse(), type: t.type.name, data };
}

/** The RoPE scaling of a model whose rope tensors (`rope_freqs`, LongRoPE's factors) are `found`; without any, the metadata's. */
export async function ggufRopeOf(
  file: GgufFile,
  cfg: ModelConfig,
  found: ReadonlyArray<{ src: ByteSource; info: GgufTensorInfo }>,
  name = 'model.gguf',
): Promise<RopeScaling | null> {
  const k = (key: string, fallback?: number) => num(file, `${cfg.arch}.${key}`, name, fallback);
  return (await ggufRopeScaling(file, cfg, found, k)) ?? cfg.ropeScaling;
}
