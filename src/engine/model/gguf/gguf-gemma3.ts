/**
 * What a Gemma 3 GGUF (`general.architecture = gemma3`) adds to gguf-model.ts's mapping, as
 * llama.cpp writes it (convert_hf_to_gguf.py / conversion/gemma.py `Gemma3Model`) and reads it
 * (src/models/gemma3.cpp `load_arch_hparams`, llama-hparams.cpp `set_swa_pattern`):
 *
 * - Names: `post_attention_norm`, `ffn_norm` (Gemma's pre-feedforward norm) and `post_ffw_norm` are
 *   HF's post_attention_layernorm, pre_feedforward_layernorm and post_feedforward_layernorm.
 * - Norms: the converter stores every `*norm.weight` as 1 + w, so the file's values are the whole
 *   factor and normWeightOffset is 0 here (1 for safetensors): the offset is never added twice, and
 *   the norms are used exactly as llama.cpp multiplies by them.
 * - Sliding window: `gemma3.attention.sliding_window` (absent or 0: every layer global);
 *   `attention.sliding_window_pattern` as one bool per layer or a period n (layer il slides when
 *   il % n < n - 1; 0: all slide), default 6, HF's every-6th-global. Sliding layers rotate with
 *   `rope.freq_base_swa` (default 10000, llama.cpp's `rope_freq_base_train_swa`) and no scaling;
 *   global ones with `rope.freq_base` and the linear `rope.scaling.*` (gguf-model.ts).
 * - The softmax scale is not in the file: llama.cpp takes 1/sqrt(head_dim), and 1/sqrt(n_embd / n_head)
 *   for the 62-layer 27B (query_pre_attn_scalar of the real checkpoints).
 * - Embeddings times sqrt(n_embd), GeGLU with tanh GELU, q/k norms (their tensors), tied output.
 * - Refused: `final_logit_softcapping` (which the engine does not apply), a partial
 *   `rope.dimension_count`.
 *
 * Not here: the safetensors config (config/hf-config-gemma3.ts), the shared keys (gguf-model.ts).
 */
import type { LayerType } from '../config/model-config';
import type { FamilyFields, NumberKey } from './gguf-family-fields';
import { GgufError, ggufValue, type GgufFile } from './gguf-reader';

/** GGUF layer tensor suffixes whose HF name differs in Gemma 3 (llama-arch.cpp LLM_ARCH_GEMMA3). */
export const GEMMA3_LAYER_NAMES: Readonly<Record<string, string>> = {
  post_attention_norm: 'post_attention_layernorm',
  ffn_norm: 'pre_feedforward_layernorm',
  post_ffw_norm: 'post_feedforward_layernorm',
};

/** llama.cpp's default period of global layers (`load_swa_pattern(ml, 6)`). */
const SWA_PERIOD = 6;
/** llama.cpp's `rope_freq_base_train_swa` default. */
const LOCAL_ROPE_BASE = 10_000;
/** llama.cpp's layer count of Gemma 3 27B, the one size whose softmax scale is not head_dim^-1/2. */
const GEMMA3_27B_LAYERS = 62;

export function gemma3Config(
  file: GgufFile,
  k: NumberKey,
  name: string,
  dims: { numLayers: number; hiddenSize: number; numHeads: number; headDim: number },
): FamilyFields {
  const { numLayers, hiddenSize, numHeads, headDim } = dims;
  const key = (s: string) => `gemma3.${s}`;
  const has = (s: string) => ggufValue(file, key(s)) !== undefined;
  const cap = ggufValue(file, key('final_logit_softcapping'));
  if (cap !== undefined && cap !== 0) {
    throw new GgufError(`${name}: metadata key ${key('final_logit_softcapping')} (${String(cap)}) is not supported (Gemma 3 has none)`);
  }
  if (has('rope.dimension_count') && k('rope.dimension_count') !== headDim) {
    throw new GgufError(`${name}: metadata key ${key('rope.dimension_count')} must be the head size ${headDim} for Gemma 3`);
  }
  const rawWindow = ggufValue(file, key('attention.sliding_window'));
  const window = rawWindow === undefined || rawWindow === 0 ? null : k('attention.sliding_window');
  if (window !== null && !Number.isInteger(window)) {
    throw new GgufError(`${name}: metadata key ${key('attention.sliding_window')} (${window}) must be a whole number of tokens`);
  }
  return {
    slidingWindow: window,
    layerTypes: window === null ? Array.from({ length: numLayers }, (): LayerType => 'full_attention') : swaPattern(file, name, numLayers),
    hiddenAct: 'gelu_tanh',
    normWeightOffset: 0,
    embeddingScale: Math.sqrt(hiddenSize),
    sandwichNorms: true,
    attentionScale: (numLayers === GEMMA3_27B_LAYERS ? Math.floor(hiddenSize / numHeads) : headDim) ** -0.5,
    ropeLocalTheta: k('rope.freq_base_swa', LOCAL_ROPE_BASE),
  };
}

/** llama.cpp's `load_swa_pattern`: one bool per layer, or a period (layer il slides when il % n < n - 1). */
function swaPattern(file: GgufFile, name: string, numLayers: number): LayerType[] {
  const pk = 'gemma3.attention.sliding_window_pattern';
  const v = ggufValue(file, pk);
  const type = (slides: boolean): LayerType => (slides ? 'sliding_attention' : 'full_attention');
  if (Array.isArray(v)) {
    if (v.length !== numLayers || v.some((x) => typeof x !== 'boolean')) {
      throw new GgufError(`${name}: metadata key ${pk} must hold one bool for each of the ${numLayers} layers`);
    }
    return v.map((x) => type(x as boolean));
  }
  if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) {
    throw new GgufError(`${name}: metadata key ${pk} must be a whole number of layers or a list of bools`);
  }
  const n = v ?? SWA_PERIOD;
  return Array.from({ length: numLayers }, (_, il) => type(n === 0 || il % n < n - 1));
}
