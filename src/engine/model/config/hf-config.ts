/**
 * parseModelConfig: a Hugging Face `config.json` -> the engine's ModelConfig (model-config.ts).
 *
 * Accepts LlamaForCausalLM (SmolLM2, Llama 3.x), MistralForCausalLM (the llama family with a sliding
 * window), Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM (Phi-3, Phi-3.5-mini, Phi-4-mini)
 * and SmolLM3ForCausalLM, with the defaults transformers' LlamaConfig / MistralConfig / Qwen2Config /
 * Qwen3Config / Phi3Config / SmolLM3Config apply to absent fields, both the
 * `rope_scaling` key of transformers 4.x and the `rope_parameters` key of transformers 5, and
 * `torch_dtype` or its newer name `dtype`. Anything the engine cannot run exactly (another
 * architecture, yarn/dynamic RoPE, a non-SiLU MLP, quantized weights) is
 * refused with a ConfigError that names the field, so a model never half-loads and then runs wrong.
 * Not here: the field readers and ConfigError (fields.ts), RoPE scaling (hf-rope.ts), Gemma 3
 * (hf-config-gemma3.ts), generation_config.json (generation-config.ts), tensor names and shapes
 * (planParameters in weights/parameter-plan.ts).
 */
import type { Architecture, LayerType, ModelConfig } from './model-config';
import { ConfigError, FieldReader, tokenIdList, TORCH_DTYPES, type Json } from './fields';
import { isGemma3Config, parseGemma3Config } from './hf-config-gemma3';
import { ropeOf } from './hf-rope';

/** HF architecture class -> Hearth family. `model_type` is the fallback when `architectures` is absent. */
const ARCHITECTURES: Record<string, Exclude<Architecture, 'gemma3'>> = {
  LlamaForCausalLM: 'llama',
  // Mistral is Llama's graph and weight names (transformers' MistralModel, llama.cpp's LLM_ARCH_LLAMA
  // for converted checkpoints) plus a sliding window (slidingWindowOf below).
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  Phi3ForCausalLM: 'phi3',
  SmolLM3ForCausalLM: 'smollm3',
};
const MODEL_TYPES: Record<string, Exclude<Architecture, 'gemma3'>> = {
  llama: 'llama',
  mistral: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  phi3: 'phi3',
  smollm3: 'smollm3',
};

/** MistralConfig's defaults (max_position_embeddings 4096 * 32; its sliding_window default is in slidingWindowOf). */
const MISTRAL_DEFAULTS = { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 131072 };

/** Defaults of the transformers config classes for the fields a checkpoint may leave out. */
const FAMILY_DEFAULTS: Record<Exclude<Architecture, 'gemma3'>, { ropeTheta: number; rmsNormEps: number; maxPositions: number }> = {
  llama: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 2048 },
  qwen2: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
  qwen3: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
  // transformers models/phi3/configuration_phi3.py, models/smollm3/configuration_smollm3.py.
  phi3: { ropeTheta: 10000, rmsNormEps: 1e-5, maxPositions: 4096 },
  smollm3: { ropeTheta: 2000000, rmsNormEps: 1e-6, maxPositions: 32768 },
};

/** Parses and validates a config.json object. `file` only labels error messages. */
export function parseModelConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${file}: expected a JSON object`);
  }
  const c = json as Json;
  // Gemma 3 has its own field set (and a nested text_config in multimodal checkpoints): hf-config-gemma3.ts.
  if (isGemma3Config(c)) return parseGemma3Config(c, file);
  const f = new FieldReader(c, file);
  const arch = architectureOf(c, file);

  if (c.quantization_config != null) {
    throw new ConfigError(`${file}: quantized checkpoints ("quantization_config") are not supported; use f32, f16 or bf16 weights`);
  }
  const numLayers = f.layerCount();
  const hiddenAct = c.hidden_act ?? 'silu';
  if (hiddenAct !== 'silu') {
    throw new ConfigError(`${file}: "hidden_act" ${JSON.stringify(hiddenAct)} is not supported; only "silu" is`);
  }

  const hiddenSize = f.positiveInt('hidden_size');
  const numHeads = f.positiveInt('num_attention_heads');
  const numKvHeads = f.positiveInt('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(`${file}: "num_attention_heads" (${numHeads}) must be a multiple of "num_key_value_heads" (${numKvHeads})`);
  }
  let headDim: number;
  if (c.head_dim != null) {
    headDim = f.positiveInt('head_dim');
  } else if (hiddenSize % numHeads !== 0) {
    throw new ConfigError(
      `${file}: "hidden_size" (${hiddenSize}) is not divisible by "num_attention_heads" (${numHeads}) and no "head_dim" is given`,
    );
  } else {
    headDim = hiddenSize / numHeads;
  }
  if (headDim % 2 !== 0) throw new ConfigError(`${file}: "head_dim" (${headDim}) must be even for RoPE`);

  const mistral = isMistral(c);
  const defaults = mistral ? MISTRAL_DEFAULTS : FAMILY_DEFAULTS[arch];
  const window = slidingWindowOf(c, file, windowRuleOf(arch, mistral), numLayers);
  const maxPositionEmbeddings = f.positiveInt('max_position_embeddings', defaults.maxPositions);
  const rotaryDim = rotaryDimOf(c, file, headDim);
  const rope = ropeOf(c, file, defaults.ropeTheta, { rotaryDim, maxPositionEmbeddings });
  // Llama, Qwen3 and SmolLM3 put `attention_bias` on q, k, v and o; Qwen2 always has q/k/v bias and
  // never an o bias; Phi-3's qkv_proj / o_proj have none (modeling_phi3.py: bias=False).
  const attentionBias = arch === 'qwen2' ? true : arch === 'phi3' ? false : f.bool('attention_bias', false);
  const outputBias = arch === 'qwen2' ? false : attentionBias;
  const mlpBias = arch === 'llama' || arch === 'smollm3' ? f.bool('mlp_bias', false) : false;

  return {
    arch,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: f.positiveInt('intermediate_size'),
    vocabSize: f.positiveInt('vocab_size'),
    rmsNormEps: f.positiveNumber('rms_norm_eps', defaults.rmsNormEps),
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    ...(rotaryDim !== headDim ? { rotaryDim } : {}),
    ...(arch === 'smollm3' ? { ropeLayers: noRopeLayersOf(c, f, file, numLayers) } : {}),
    ...(arch === 'phi3' ? { fusedProjections: true } : {}),
    // A window as long as the longest context masks nothing: every layer attends fully.
    ...(window.slidingWindow === null || window.slidingWindow >= maxPositionEmbeddings
      ? { slidingWindow: null, layerTypes: fullAttentionLayers(numLayers) }
      : window),
    maxPositionEmbeddings,
    // SmolLM3Config defaults tie_word_embeddings to True; Llama, Mistral, Qwen2, Qwen3 and Phi3 to False.
    tieWordEmbeddings: f.bool('tie_word_embeddings', arch === 'smollm3'),
    attentionBias,
    outputBias,
    mlpBias,
    qkNorm: arch === 'qwen3',
    hiddenAct: 'silu',
    bosTokenId: f.tokenIdOrNull('bos_token_id'),
    eosTokenIds: tokenIdList(c.eos_token_id, 'eos_token_id', file),
    torchDtype: TORCH_DTYPES[String(c.torch_dtype ?? c.dtype ?? '')] ?? null,
  };
}

/**
 * Rotated dims per head: int(head_dim * partial_rotary_factor) as transformers computes `dim` in
 * modeling_rope_utils.py (top level in 4.x, inside rope_parameters in 5); llama.cpp's n_rot.
 */
function rotaryDimOf(c: Json, file: string, headDim: number): number {
  const params = (c.rope_parameters ?? {}) as Json;
  const key = params.partial_rotary_factor != null ? 'rope_parameters.partial_rotary_factor' : 'partial_rotary_factor';
  const factor = params.partial_rotary_factor ?? c.partial_rotary_factor ?? 1;
  if (typeof factor !== 'number' || !(factor > 0 && factor <= 1)) {
    throw new ConfigError(`${file}: "${key}" must be a number in (0, 1] (got ${JSON.stringify(factor)})`);
  }
  const dim = Math.floor(headDim * factor);
  if (dim < 2 || dim % 2 !== 0)
    throw new ConfigError(`${file}: "${key}" ${factor} gives ${dim} rotated dims of ${headDim}; RoPE needs an even count`);
  return dim;
}

/**
 * SmolLM3's `no_rope_layers`: one 0/1 per layer, 1 = the layer applies RoPE (modeling_smollm3.py
 * `self.use_rope = config.no_rope_layers[layer_idx]`, despite the name); absent, every
 * `no_rope_layer_interval`-th layer (1-based) skips it, as SmolLM3Config builds it.
 */
function noRopeLayersOf(c: Json, f: FieldReader, file: string, numLayers: number): boolean[] {
  const list = c.no_rope_layers;
  if (list == null) {
    const interval = f.positiveInt('no_rope_layer_interval', 4);
    return Array.from({ length: numLayers }, (_, l) => (l + 1) % interval !== 0);
  }
  if (!Array.isArray(list) || list.length < numLayers || list.some((v) => v !== 0 && v !== 1 && typeof v !== 'boolean')) {
    throw new ConfigError(`${file}: "no_rope_layers" must list 0 or 1 for each of the ${numLayers} layers`);
  }
  return list.slice(0, numLayers).map((v) => v === 1 || v === true);
}

/**
 * Phi-3's `sliding_window` (modeling_phi3.py passes it to every layer's attention): recorded as
 * sliding layers when it is shorter than the context, for the engine's windowed attention. Others
 * keep refusing `use_sliding_window` above.
 */
/** Which of transformers' window rules an architecture's config class follows (slidingWindowOf). */
function windowRuleOf(arch: Architecture, mistral: boolean): WindowRule {
  if (mistral) return 'mistral';
  if (arch === 'phi3') return 'phi3';
  return arch === 'llama' ? 'none' : 'qwen';
}

/** Layer types of a model without a sliding window. */
export function fullAttentionLayers(numLayers: number): LayerType[] {
  return Array.from({ length: numLayers }, () => 'full_attention' as const);
}

function isMistral(c: Json): boolean {
  return Array.isArray(c.architectures) ? c.architectures[0] === 'MistralForCausalLM' : c.model_type === 'mistral';
}

function architectureOf(c: Json, file: string): Exclude<Architecture, 'gemma3'> {
  const list = c.architectures;
  if (list != null) {
    if (!Array.isArray(list) || list.length === 0 || typeof list[0] !== 'string') {
      throw new ConfigError(`${file}: "architectures" must be a non-empty list of class names`);
    }
    const arch = ARCHITECTURES[list[0]];
    if (!arch) {
      throw new ConfigError(`${file}: unsupported architecture "${list[0]}"; Hearth runs ${supportedClasses()}`);
    }
    return arch;
  }
  const arch = typeof c.model_type === 'string' ? MODEL_TYPES[c.model_type] : undefined;
  if (!arch) {
    throw new ConfigError(
      `${file}: unsupported model_type ${JSON.stringify(c.model_type ?? null)} and no "architectures"; Hearth runs ${supportedClasses()}`,
    );
  }
  return arch;
}

function supportedClasses(): string {
  return [...Object.keys(ARCHITECTURES), 'Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration'].join(', ');
}

/** How a family derives its window when the config lists no `layer_types`. */
type WindowRule = 'none' | 'mistral' | 'phi3' | 'qwen';

const LAYER_TYPES: readonly LayerType[] = ['full_attention', 'sliding_attention'];

/**
 * The sliding-window fields of a Hugging Face config.json -> ModelConfig's slidingWindow and
 * layerTypes (model/config/attention-window.ts says what they mean), as transformers' config classes
 * derive them:
 * - `layer_types` given (transformers >= 4.53 writes it): taken as it is, checked.
 * - MistralConfig: `sliding_window` defaults to 4096 when the key is absent; null means none; every
 *   layer slides (MistralAttention passes config.sliding_window to every layer).
 * - Qwen2Config / Qwen3Config: a window only with `use_sliding_window: true`, then layers
 *   i >= `max_window_layers` (default 28) slide and the others attend fully; `sliding_window`
 *   defaults to 4096.
 * - Phi3Config: `sliding_window` (default None) on every layer (Phi3Attention passes it to each).
 * - Qwen2Config's rule also serves SmolLM3Config, which has the same three fields.
 * - LlamaConfig has no window.
 * Reference: transformers models/mistral/configuration_mistral.py, models/qwen2/configuration_qwen2.py,
 * models/phi3/modeling_phi3.py, models/smollm3/configuration_smollm3.py.
 */
function slidingWindowOf(c: Json, file: string, rule: WindowRule, numLayers: number): Pick<ModelConfig, 'slidingWindow' | 'layerTypes'> {
  const f = new FieldReader(c, file);
  const windowField = (fallback: number | null): number | null => {
    if (!('sliding_window' in c)) return fallback;
    return c.sliding_window === null ? null : f.positiveInt('sliding_window');
  };
  if (c.layer_types != null) {
    const list = c.layer_types;
    if (!Array.isArray(list) || list.length !== numLayers || list.some((t) => !LAYER_TYPES.includes(t as LayerType))) {
      throw new ConfigError(
        `${file}: "layer_types" must list ${numLayers} entries, each "full_attention" or "sliding_attention" (got ${Array.isArray(list) ? `${list.length} entries` : typeof list})`,
      );
    }
    const slidingWindow =
      rule === 'qwen' && c.use_sliding_window !== true ? null : windowField(rule === 'mistral' || rule === 'qwen' ? 4096 : null);
    // Without a window transformers' sliding layers get sliding_window None: they attend fully.
    if (slidingWindow === null || !list.includes('sliding_attention'))
      return { slidingWindow: null, layerTypes: fullAttentionLayers(numLayers) };
    return { slidingWindow, layerTypes: list as LayerType[] };
  }
  let slidingWindow: number | null = null;
  let firstSliding = 0;
  if (rule === 'mistral') slidingWindow = windowField(4096);
  if (rule === 'phi3') slidingWindow = windowField(null);
  if (rule === 'qwen' && f.bool('use_sliding_window', false)) {
    slidingWindow = windowField(4096);
    firstSliding = c.max_window_layers == null ? 28 : (f.optionalInt('max_window_layers', 0) ?? 28);
  }
  const layerTypes = Array.from({ length: numLayers }, (_, i): LayerType =>
    slidingWindow !== null && i >= firstSliding ? 'sliding_attention' : 'full_attention',
  );
  return { slidingWindow: layerTypes.includes('sliding_attention') ? slidingWindow : null, layerTypes };
}
