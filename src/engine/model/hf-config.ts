/**
 * parseModelConfig: a Hugging Face `config.json` -> the engine's ModelConfig (config.ts).
 *
 * Accepts LlamaForCausalLM (SmolLM2, Llama 3.x), Qwen2ForCausalLM and Qwen3ForCausalLM, with the
 * defaults transformers' LlamaConfig / Qwen2Config / Qwen3Config apply to absent fields, both the
 * `rope_scaling` key of transformers 4.x and the `rope_parameters` key of transformers 5, and
 * `torch_dtype` or its newer name `dtype`. Anything the engine cannot run exactly (another
 * architecture, yarn/dynamic RoPE, sliding-window attention, a non-SiLU MLP, quantized weights) is
 * refused with a ConfigError that names the field, so a model never half-loads and then runs wrong.
 * Not here: generation_config.json (generation-config.ts), tensor names and shapes (planParameters in weights.ts).
 */
import type { Architecture, DType, LayerType, ModelConfig, RopeScaling } from './config';
import { isGemma3Config, parseGemma3Config } from './hf-config-gemma3';

/** A config.json (or generation_config.json) that Hearth cannot use; the message names the field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** HF architecture class -> Hearth family. `model_type` is the fallback when `architectures` is absent. */
const ARCHITECTURES: Record<string, Exclude<Architecture, 'gemma3'>> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};
const MODEL_TYPES: Record<string, Exclude<Architecture, 'gemma3'>> = { llama: 'llama', qwen2: 'qwen2', qwen3: 'qwen3' };

/** Defaults of the transformers config classes for the fields a checkpoint may leave out. */
const FAMILY_DEFAULTS: Record<Exclude<Architecture, 'gemma3'>, { ropeTheta: number; rmsNormEps: number; maxPositions: number }> = {
  llama: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 2048 },
  qwen2: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
  qwen3: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768 },
};

export const TORCH_DTYPES: Record<string, DType> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16' };

type Json = Record<string, unknown>;

/** Parses and validates a config.json object. `file` only labels error messages. */
export function parseModelConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${file}: expected a JSON object`);
  }
  const c = json as Json;
  // Gemma 3 has its own field set (and a nested text_config in multimodal checkpoints): hf-config-gemma3.ts.
  if (isGemma3Config(c)) return parseGemma3Config(c, file, { ConfigError, FieldReader, ropeOf, tokenIdList, TORCH_DTYPES });
  const f = new FieldReader(c, file);
  const arch = architectureOf(c, file);

  if (c.quantization_config != null) {
    throw new ConfigError(`${file}: quantized checkpoints ("quantization_config") are not supported; use f32, f16 or bf16 weights`);
  }
  if (c.use_sliding_window === true) {
    throw new ConfigError(`${file}: "use_sliding_window": true is not supported (Hearth runs full causal attention)`);
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

  const defaults = FAMILY_DEFAULTS[arch];
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
    // Sliding windows are refused above until the engine runs them; every layer attends fully.
    slidingWindow: null,
    layerTypes: fullAttentionLayers(numLayers),
    maxPositionEmbeddings: f.positiveInt('max_position_embeddings', defaults.maxPositions),
    // LlamaConfig, Qwen2Config and Qwen3Config all default tie_word_embeddings to False.
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

/**
 * RoPE base and scaling. transformers 4.x: `rope_theta` + `rope_scaling` ({type|rope_type, ...});
 * transformers 5: `rope_parameters` ({rope_type, rope_theta, ...}). "default" means no scaling.
 */
export function ropeOf(c: Json, file: string, defaultTheta: number): { theta: number; scaling: RopeScaling | null } {
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
