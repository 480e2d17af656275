/**
 * What a GGUF of one of the families beyond llama/qwen2/qwen3 adds to gguf-model.ts's mapping, as
 * llama.cpp reads it (src/llama-model.cpp `load_hparams`, src/models/*.cpp):
 * - Phi-3 (`phi3`): fused `attn_qkv` and `ffn_up` ([gate; up]) are HF's `qkv_proj` and
 *   `gate_up_proj`; `rope.dimension_count` is the rotated part of a head; LongRoPE comes as the
 *   tensors `rope_factors_short/long.weight` with `rope.scaling.original_context_length` and
 *   `rope.scaling.attn_factor`.
 * - SmolLM3 (`smollm3`): llama's names, q/k rows permuted as llama's; every 4th layer skips RoPE
 *   (llama.cpp hard-codes `n_no_rope_layer_step = 4`, SmolLM3's default `no_rope_layers`).
 * - Mistral is written as `llama`; `{arch}.attention.sliding_window`, where a file has it and it is
 *   shorter than the context, makes every layer a sliding one, as transformers' Mistral and Phi-3 do.
 * - Gemma 3 (`gemma3`): gguf-gemma3.ts.
 *
 * Not here: the shared name table and config keys (gguf-model.ts), parsing (gguf-reader.ts).
 */
import type { Architecture, LayerType, ModelConfig, RopeScaling } from '../config/model-config';
import type { FamilyFields, NumberKey } from './gguf-family-fields';
import type { ByteSource } from '../files/safetensors';
import { GEMMA3_LAYER_NAMES, gemma3Config } from './gguf-gemma3';
import { GgufError, ggufValue, readGgufTensor, type GgufFile, type GgufTensorInfo } from './gguf-reader';

/** Families whose q/k rows llama.cpp's converter permutes for its interleaved RoPE (gguf-model.ts `unpermuteRows`). */
export const PERMUTED_QK: readonly Architecture[] = ['llama', 'smollm3'];

/** GGUF layer tensor suffixes whose HF name differs in a family. */
export const FAMILY_LAYER_NAMES: Partial<Record<Architecture, Readonly<Record<string, string>>>> = {
  phi3: { attn_qkv: 'self_attn.qkv_proj', ffn_up: 'mlp.gate_up_proj' },
  gemma3: GEMMA3_LAYER_NAMES,
};

const ROPE_FREQS = 'rope_freqs.weight';
const ROPE_SHORT = 'rope_factors_short.weight';
const ROPE_LONG = 'rope_factors_long.weight';
/** Tensors a GGUF may carry that are RoPE parameters, not weights of the HF layout. */
export const ROPE_TENSORS: ReadonlySet<string> = new Set([ROPE_FREQS, ROPE_SHORT, ROPE_LONG]);

/** The family fields of a ModelConfig (rotaryDim, ropeLayers, fusedProjections, sliding window, Gemma 3's). */
export function ggufFamilyConfig(
  file: GgufFile,
  a: Architecture,
  k: NumberKey,
  name: string,
  dims: { numLayers: number; hiddenSize: number; numHeads: number; headDim: number; maxPositionEmbeddings: number },
): FamilyFields {
  const { numLayers, headDim, maxPositionEmbeddings } = dims;
  if (a === 'gemma3') return gemma3Config(file, k, name, dims);
  const rotaryDim = k('rope.dimension_count', headDim);
  if (!Number.isInteger(rotaryDim) || rotaryDim % 2 !== 0 || rotaryDim > headDim) {
    throw new GgufError(`${name}: metadata key ${a}.rope.dimension_count (${rotaryDim}) must be even and at most the head size ${headDim}`);
  }
  const window = ggufValue(file, `${a}.attention.sliding_window`) === undefined ? null : k('attention.sliding_window');
  if (window !== null && !Number.isInteger(window)) {
    throw new GgufError(`${name}: metadata key ${a}.attention.sliding_window (${window}) must be a whole number of tokens`);
  }
  const sliding = window !== null && window < maxPositionEmbeddings;
  const layerTypes = Array.from({ length: numLayers }, (): LayerType => (sliding ? 'sliding_attention' : 'full_attention'));
  return {
    ...(rotaryDim !== headDim ? { rotaryDim } : {}),
    ...(a === 'smollm3' ? { ropeLayers: Array.from({ length: numLayers }, (_, l) => (l + 1) % 4 !== 0) } : {}),
    ...(a === 'phi3' ? { fusedProjections: true } : {}),
    slidingWindow: sliding ? window : null,
    layerTypes,
    hiddenAct: 'silu',
  };
}

/**
 * The RoPE scaling a file's rope tensors give (`found`: those of its tensors, with the bytes of the
 * part holding each), or null. Each is F32 with one value per rotated frequency.
 */
export async function ggufRopeScaling(
  file: GgufFile,
  cfg: ModelConfig,
  found: ReadonlyArray<{ src: ByteSource; info: GgufTensorInfo }>,
  k: NumberKey,
): Promise<RopeScaling | null> {
  const n = (cfg.rotaryDim ?? cfg.headDim) / 2;
  const read = async (tensor: string): Promise<number[] | null> => {
    const t = found.find((x) => x.info.name === tensor);
    if (!t) return null;
    if (t.info.type.name !== 'F32' || t.info.elements !== n || t.info.ne.length !== 1) {
      throw new GgufError(`tensor ${tensor} must be F32 [${n}], got ${t.info.type.name} [${t.info.ne.join(', ')}]`);
    }
    return Array.from(new Float32Array((await readGgufTensor(t.src, t.info)).slice().buffer));
  };
  const [freqs, short, long] = [await read(ROPE_FREQS), await read(ROPE_SHORT), await read(ROPE_LONG)];
  if (!short !== !long) throw new GgufError(`tensors ${ROPE_SHORT} and ${ROPE_LONG} come together, and one is missing`);
  if (short && long) {
    if (freqs) throw new GgufError(`tensor ${ROPE_FREQS} and LongRoPE's ${ROPE_SHORT} exclude each other`);
    // llama.cpp scales cos and sin by attn_factor, 1 when the key is absent.
    const attn = ggufValue(file, `${cfg.arch}.rope.scaling.attn_factor`) === undefined ? 1 : k('rope.scaling.attn_factor');
    return {
      type: 'longrope',
      shortFactor: short,
      longFactor: long,
      originalMaxPositionEmbeddings: k('rope.scaling.original_context_length'),
      attentionFactor: attn,
    };
  }
  return freqs ? { type: 'freq_factors', factors: freqs } : null;
}
