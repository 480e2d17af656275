/**
 * parseModelConfig: a Hugging Face `config.json` -> the engine's ModelConfig (config.ts).
 *
 * Accepts LlamaForCausalLM (SmolLM2, Llama 3.x), MistralForCausalLM (the llama family with a sliding
 * window), Qwen2ForCausalLM and Qwen3ForCausalLM, with the defaults transformers' LlamaConfig /
 * MistralConfig / Qwen2Config / Qwen3Config apply to absent fields, both the
 * `rope_scaling` key of transformers 4.x and the `rope_parameters` key of transformers 5, and
 * `torch_dtype` or its newer name `dtype`. Anything the engine cannot run exactly (another
 * architecture, yarn/dynamic RoPE, a non-SiLU MLP, quantized weights) is
 * refused with a ConfigError that names the field, so a model never half-loads and then runs wrong.
 * Not here: generation_config.json (generation-config.ts), tensor names and shapes (planParameters in weights.ts).
 */
import type { Architecture, DType, LayerType, ModelConfig, RopeScaling } from './config';

/** A config.json (or generation_config.json) that Hearth cannot use; the message names the field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** HF architecture class -> Hearth family. `model_type` is the fallback when `architectures` is absent. */
const ARCHITECTURES: Record<string, Architecture> = {
  LlamaForCausalLM: 'llama',
  // Mistral is Llama's graph and weight names (transformers' MistralModel, llama.cpp's LLM_ARCH_LLAMA
  // for converted checkpoints) plus a sliding window (slidingWindowOf below).
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};
const MODEL_TYPES: Record<string, Architecture> = { llama: 'llama', mistral: 'llama', qwen2: 'qwen2', qwen3: 'qwen3' };

/** MistralConfig's defaults (max_position_embeddings 4096 * 32; its sliding_window default is in slidingWindowOf). */
const MISTRAL_DEFAULTS = { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 131072 };

/** Defaults of the transformers config classes for the fields a checkpoint may leave out. */
const FAMILY_DEFAULTS: Record<Architecture, { ropeTheta: number; rmsNormEps: number; maxPositions: number }> = {
  llama: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 2048 },
  qwen2: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
  qwen3: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
};

const TORCH_DTYPES: Record<string, DType> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16' };

type Json = Record<string, unknown>;

/** Parses and validates a config.json object. `file` only labels error messages. */
export function parseModelConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${file}: expected a JSON object`);
  }
  const c = json as Json;
  const f = new FieldReader(c, file);
  const arch = architectureOf(c, file);

  if (c.quantization_config != null) {
    throw new ConfigError(`${file}: quantized checkpoints ("quantization_config") are not supported; use f32, f16 or bf16 weights`);
  }
  const numLayers = f.positiveInt('num_hidden_layers');
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
  const window = slidingWindowOf(c, file, mistral ? 'mistral' : arch === 'llama' ? 'none' : 'qwen', numLayers);
  const maxPositionEmbeddings = f.positiveInt('max_position_embeddings', defaults.maxPositions);
  const rope = ropeOf(c, file, defaults.ropeTheta);
  // Llama and Qwen3 put `attention_bias` on q, k, v and o; Qwen2 always has q/k/v bias and never an o bias.
  const attentionBias = arch === 'qwen2' ? true : f.bool('attention_bias', false);
  const outputBias = arch === 'qwen2' ? false : attentionBias;
  const mlpBias = arch === 'llama' ? f.bool('mlp_bias', false) : false;

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
    // A window past the longest context masks nothing; capped so that it stays a u32 for the kernels.
    slidingWindow: window.slidingWindow === null ? null : Math.min(window.slidingWindow, maxPositionEmbeddings),
    layerTypes: window.layerTypes,
    maxPositionEmbeddings,
    // LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config all default tie_word_embeddings to False.
    tieWordEmbeddings: f.bool('tie_word_embeddings', false),
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

/** Layer types of a model without a sliding window. */
export function fullAttentionLayers(numLayers: number): LayerType[] {
  return Array.from({ length: numLayers }, () => 'full_attention' as const);
}

function isMistral(c: Json): boolean {
  return Array.isArray(c.architectures) ? c.architectures[0] === 'MistralForCausalLM' : c.model_type === 'mistral';
}

function architectureOf(c: Json, file: string): Architecture {
  const list = c.architectures;
  if (list != null) {
    if (!Array.isArray(list) || list.length === 0 || typeof list[0] !== 'string') {
      throw new ConfigError(`${file}: "architectures" must be a non-empty list of class names`);
    }
    const arch = ARCHITECTURES[list[0]];
    if (!arch) {
      throw new ConfigError(`${file}: unsupported architecture "${list[0]}"; Hearth runs ${Object.keys(ARCHITECTURES).join(', ')}`);
    }
    return arch;
  }
  const arch = typeof c.model_type === 'string' ? MODEL_TYPES[c.model_type] : undefined;
  if (!arch) {
    throw new ConfigError(
      `${file}: unsupported model_type ${JSON.stringify(c.model_type ?? null)} and no "architectures"; Hearth runs ${Object.keys(ARCHITECTURES).join(', ')}`,
    );
  }
  return arch;
}

/**
 * RoPE base and scaling. transformers 4.x: `rope_theta` + `rope_scaling` ({type|rope_type, ...});
 * transformers 5: `rope_parameters` ({rope_type, rope_theta, ...}). "default" means no scaling.
 */
function ropeOf(c: Json, file: string, defaultTheta: number): { theta: number; scaling: RopeScaling | null } {
  const params = c.rope_parameters ?? c.rope_scaling;
  const key = c.rope_parameters != null ? 'rope_parameters' : 'rope_scaling';
  if (params != null && (typeof params !== 'object' || Array.isArray(params))) {
    throw new ConfigError(`${file}: "${key}" must be an object or null`);
  }
  const p = (params ?? {}) as Json;
  const pf = new FieldReader(p, `${file}: "${key}"`);
  const theta =
    p.rope_theta != null ? pf.positiveNumber('rope_theta') : new FieldReader(c, file).positiveNumber('rope_theta', defaultTheta);
  if (params == null) return { theta, scaling: null };
  const type = p.rope_type ?? p.type ?? 'default';
  switch (type) {
    case 'default':
      return { theta, scaling: null };
    case 'linear':
      return { theta, scaling: { type: 'linear', factor: pf.positiveNumber('factor') } };
    case 'llama3':
      return {
        theta,
        scaling: {
          type: 'llama3',
          factor: pf.positiveNumber('factor'),
          lowFreqFactor: pf.positiveNumber('low_freq_factor'),
          highFreqFactor: pf.positiveNumber('high_freq_factor'),
          originalMaxPositionEmbeddings: pf.positiveInt('original_max_position_embeddings'),
        },
      };
    default:
      throw new ConfigError(
        `${file}: "${key}" type ${JSON.stringify(type)} is not supported; Hearth supports "default", "linear" and "llama3"`,
      );
  }
}

/** eos_token_id may be an int, a list of ints, or absent/null. */
export function tokenIdList(value: unknown, field: string, file: string): number[] {
  if (value == null) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const id of list) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw new ConfigError(`${file}: "${field}" must be a token id or a list of token ids (got ${JSON.stringify(value)})`);
    }
  }
  return [...new Set(list as number[])];
}

/** Typed field access with error messages that name the field and show the bad value. */
export class FieldReader {
  constructor(
    private readonly obj: Json,
    private readonly where: string,
  ) {}

  private missing(name: string): never {
    throw new ConfigError(`${this.where}: missing required field "${name}"`);
  }

  private bad(name: string, what: string): never {
    throw new ConfigError(`${this.where}: "${name}" must be ${what} (got ${JSON.stringify(this.obj[name])})`);
  }

  positiveInt(name: string, fallback?: number): number {
    const v = this.obj[name];
    if (v == null) return fallback ?? this.missing(name);
    if (!Number.isInteger(v) || (v as number) <= 0) this.bad(name, 'a positive integer');
    return v as number;
  }

  positiveNumber(name: string, fallback?: number): number {
    const v = this.obj[name];
    if (v == null) return fallback ?? this.missing(name);
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.bad(name, 'a positive number');
    return v;
  }

  optionalNumber(name: string, min = -Infinity): number | undefined {
    const v = this.obj[name];
    if (v == null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) this.bad(name, `a number >= ${min}`);
    return v;
  }

  optionalInt(name: string, min = 0): number | undefined {
    const v = this.obj[name];
    if (v == null) return undefined;
    if (!Number.isInteger(v) || (v as number) < min) this.bad(name, `an integer >= ${min}`);
    return v as number;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.obj[name];
    if (v == null) return fallback;
    if (typeof v !== 'boolean') this.bad(name, 'true or false');
    return v;
  }

  tokenIdOrNull(name: string): number | null {
    const v = this.obj[name];
    if (v == null) return null;
    // A few configs carry a list here too; the first id is the one that is prepended.
    if (Array.isArray(v)) return tokenIdList(v, name, this.where)[0] ?? null;
    if (!Number.isInteger(v) || (v as number) < 0) this.bad(name, 'a token id');
    return v as number;
  }
}

/** How a family derives its window when the config lists no `layer_types`. */
type WindowRule = 'none' | 'mistral' | 'qwen';

const LAYER_TYPES: readonly LayerType[] = ['full_attention', 'sliding_attention'];

/**
 * The sliding-window fields of a Hugging Face config.json -> ModelConfig's slidingWindow and
 * layerTypes (model/attention-window.ts says what they mean), as transformers' config classes
 * derive them:
 * - `layer_types` given (transformers >= 4.53 writes it): taken as it is, checked.
 * - MistralConfig: `sliding_window` defaults to 4096 when the key is absent; null means none; every
 *   layer slides (MistralAttention passes config.sliding_window to every layer).
 * - Qwen2Config / Qwen3Config: a window only with `use_sliding_window: true`, then layers
 *   i >= `max_window_layers` (default 28) slide and the others attend fully; `sliding_window`
 *   defaults to 4096.
 * - LlamaConfig has no window.
 * Reference: transformers models/mistral/configuration_mistral.py, models/qwen2/configuration_qwen2.py.
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
    const slidingWindow = rule === 'qwen' && c.use_sliding_window !== true ? null : windowField(rule === 'none' ? null : 4096);
    // Without a window transformers' sliding layers get sliding_window None: they attend fully.
    if (slidingWindow === null || !list.includes('sliding_attention'))
      return { slidingWindow: null, layerTypes: fullAttentionLayers(numLayers) };
    return { slidingWindow, layerTypes: list as LayerType[] };
  }
  let slidingWindow: number | null = null;
  let firstSliding = 0;
  if (rule === 'mistral') slidingWindow = windowField(4096);
  if (rule === 'qwen' && f.bool('use_sliding_window', false)) {
    slidingWindow = windowField(4096);
    firstSliding = c.max_window_layers == null ? 28 : (f.optionalInt('max_window_layers', 0) ?? 28);
  }
  const layerTypes = Array.from({ length: numLayers }, (_, i): LayerType =>
    slidingWindow !== null && i >= firstSliding ? 'sliding_attention' : 'full_attention',
  );
  return { slidingWindow: layerTypes.includes('sliding_attention') ? slidingWindow : null, layerTypes };
}
