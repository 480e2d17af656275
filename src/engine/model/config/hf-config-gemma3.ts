/**
 * parseGemma3Config: a Gemma 3 `config.json` -> ModelConfig. `Gemma3ForCausalLM` (model_type
 * `gemma3_text`: 270M, 1B) carries the text fields at the top level; `Gemma3ForConditionalGeneration`
 * (4B and up) nests them under `text_config` beside a vision tower the engine does not run.
 *
 * What Gemma differs in, each checked against transformers' models/gemma3 (configuration_gemma3.py,
 * modeling_gemma3.py) and llama.cpp (src/models/gemma3.cpp, llama-model.cpp LLM_ARCH_GEMMA3):
 *   - embeddings * sqrt(hidden_size) (Gemma3TextScaledWordEmbedding; llama.cpp ggml_scale by sqrtf(n_embd));
 *   - RMSNorm as x * (1 + w) (Gemma3RMSNorm; llama.cpp's converter stores w + 1 in the GGUF instead);
 *   - four norms per layer (sandwich norms) and per-head q/k norms;
 *   - softmax scale query_pre_attn_scalar^-1/2 (Gemma3Attention.scaling);
 *   - GeGLU with the tanh GELU (`hidden_activation`: "gelu_pytorch_tanh");
 *   - `layer_types` (or every `sliding_window_pattern`-th layer global, default 6: layer i is global
 *     when (i + 1) % pattern == 0), sliding layers with their own RoPE base `rope_local_base_freq`
 *     and no scaling, global layers with `rope_theta` and `rope_scaling`;
 *   - tied embeddings by default.
 * Refused: logit soft-capping (Gemma 2's, null in every Gemma 3 config) and bidirectional attention
 * (EmbeddingGemma), which this decoder does not run.
 * Not here: the other families (hf-config.ts), tensor names (weights/parameter-plan.ts).
 */
import type { LayerType, ModelConfig } from './model-config';
import { ConfigError, FieldReader, tokenIdList, TORCH_DTYPES, type Json } from './fields';
import { ropeOf } from './hf-rope';

/** Defaults of transformers' Gemma3TextConfig for fields a checkpoint may leave out. */
const DEFAULTS = {
  ropeTheta: 1_000_000,
  ropeLocalTheta: 10_000,
  rmsNormEps: 1e-6,
  maxPositions: 131_072,
  slidingWindow: 4096,
  slidingWindowPattern: 6,
  queryPreAttnScalar: 256,
  headDim: 256,
};

export function isGemma3Config(c: Json): boolean {
  const arch = Array.isArray(c.architectures) ? c.architectures[0] : undefined;
  if (arch === 'Gemma3ForCausalLM' || arch === 'Gemma3ForConditionalGeneration') return true;
  return arch == null && (c.model_type === 'gemma3_text' || c.model_type === 'gemma3');
}

export function parseGemma3Config(c: Json, file: string): ModelConfig {
  const arch = Array.isArray(c.architectures) ? c.architectures[0] : undefined;
  const multimodal = arch === 'Gemma3ForConditionalGeneration' || (arch == null && c.model_type === 'gemma3');
  let t = c;
  let where = file;
  if (multimodal) {
    if (c.text_config == null || typeof c.text_config !== 'object' || Array.isArray(c.text_config)) {
      throw new ConfigError(`${file}: a Gemma3ForConditionalGeneration config needs a "text_config" object`);
    }
    t = c.text_config as Json;
    where = `${file}: "text_config"`;
  }
  const f = new FieldReader(t, where);
  if ((t.quantization_config ?? c.quantization_config) != null) {
    throw new ConfigError(`${file}: quantized checkpoints ("quantization_config") are not supported; use f32, f16 or bf16 weights`);
  }
  for (const cap of ['attn_logit_softcapping', 'final_logit_softcapping']) {
    if (t[cap] != null) throw new ConfigError(`${where}: "${cap}" is not supported (Gemma 3 sets it to null)`);
  }
  if (t.use_bidirectional_attention === true) {
    throw new ConfigError(`${where}: "use_bidirectional_attention": true (an embedding model) is not supported`);
  }
  const act = t.hidden_activation ?? t.hidden_act ?? 'gelu_pytorch_tanh';
  if (act !== 'gelu_pytorch_tanh' && act !== 'gelu_tanh') {
    throw new ConfigError(`${where}: "hidden_activation" ${JSON.stringify(act)} is not supported; Gemma 3 uses "gelu_pytorch_tanh"`);
  }
  if (f.bool('attention_bias', false)) throw new ConfigError(`${where}: "attention_bias": true is not supported for Gemma 3`);

  const numLayers = f.layerCount();
  const hiddenSize = f.positiveInt('hidden_size');
  const numHeads = f.positiveInt('num_attention_heads');
  const numKvHeads = f.positiveInt('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(`${where}: "num_attention_heads" (${numHeads}) must be a multiple of "num_key_value_heads" (${numKvHeads})`);
  }
  const headDim = f.positiveInt('head_dim', DEFAULTS.headDim);
  if (headDim % 2 !== 0) throw new ConfigError(`${where}: "head_dim" (${headDim}) must be even for RoPE`);
  const maxPositionEmbeddings = f.positiveInt('max_position_embeddings', DEFAULTS.maxPositions);
  const rope = gemmaRope(t, where, { rotaryDim: headDim, maxPositionEmbeddings });
  const slidingWindow = f.positiveInt('sliding_window', DEFAULTS.slidingWindow);
  const layerTypes = gemmaLayerTypes(t, f, where, numLayers);
  // Gemma3TextConfig defaults tie_word_embeddings to True; the multimodal config keeps it at the top.
  const tied = new FieldReader(c, file).bool('tie_word_embeddings', f.bool('tie_word_embeddings', true));

  const attention = { numHeads, numKvHeads, headDim };
  return {
    arch: 'gemma3',
    hiddenSize,
    numLayers,
    ...attention,
    intermediateSize: f.positiveInt('intermediate_size'),
    vocabSize: f.positiveInt('vocab_size'),
    rmsNormEps: f.positiveNumber('rms_norm_eps', DEFAULTS.rmsNormEps),
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    slidingWindow,
    layerTypes,
    maxPositionEmbeddings,
    tieWordEmbeddings: tied,
    attentionBias: false,
    outputBias: false,
    mlpBias: false,
    qkNorm: true,
    hiddenAct: 'gelu_tanh',
    bosTokenId: new FieldReader(c, file).tokenIdOrNull('bos_token_id') ?? f.tokenIdOrNull('bos_token_id'),
    eosTokenIds: tokenIdList(c.eos_token_id ?? t.eos_token_id, 'eos_token_id', file),
    torchDtype: TORCH_DTYPES[String(t.torch_dtype ?? t.dtype ?? c.torch_dtype ?? c.dtype ?? '')] ?? null,
    normWeightOffset: 1,
    embeddingScale: Math.sqrt(hiddenSize),
    sandwichNorms: true,
    attentionScale: f.positiveNumber('query_pre_attn_scalar', DEFAULTS.queryPreAttnScalar) ** -0.5,
    ropeLocalTheta: rope.localTheta,
    multimodalCheckpoint: multimodal,
  };
}

/**
 * transformers 4.x: `rope_theta` + `rope_scaling` for global layers, `rope_local_base_freq` for local
 * ones (Gemma3RotaryEmbedding built on a copy of the config with rope_type "default").
 * transformers 5: `rope_parameters` keyed by layer type ({full_attention: {...}, sliding_attention: {...}}).
 */
function gemmaRope(t: Json, where: string, dims: { rotaryDim: number; maxPositionEmbeddings: number }) {
  const params = t.rope_parameters as Json | null | undefined;
  if (params != null && typeof params === 'object' && ('full_attention' in params || 'sliding_attention' in params)) {
    // A base inside each entry wins; files that keep rope_theta / rope_local_base_freq flat beside it exist too.
    const full = ropeOf({ rope_theta: t.rope_theta, rope_parameters: params.full_attention ?? {} }, where, DEFAULTS.ropeTheta, dims);
    const local = ropeOf(
      { rope_theta: t.rope_local_base_freq, rope_parameters: params.sliding_attention ?? {} },
      where,
      DEFAULTS.ropeLocalTheta,
      dims,
    );
    if (local.scaling) throw new ConfigError(`${where}: "rope_parameters.sliding_attention" must use the default RoPE type`);
    return { ...full, localTheta: local.theta };
  }
  const full = ropeOf(t, where, DEFAULTS.ropeTheta, dims);
  return { ...full, localTheta: new FieldReader(t, where).positiveNumber('rope_local_base_freq', DEFAULTS.ropeLocalTheta) };
}

/** `layer_types` when present, else every `sliding_window_pattern`-th layer is global. */
function gemmaLayerTypes(t: Json, f: FieldReader, where: string, numLayers: number): LayerType[] {
  if (t.layer_types != null) {
    const list = t.layer_types;
    if (!Array.isArray(list) || list.length !== numLayers || list.some((x) => x !== 'full_attention' && x !== 'sliding_attention')) {
      throw new ConfigError(
        `${where}: "layer_types" must list "full_attention" or "sliding_attention" for each of the ${numLayers} layers`,
      );
    }
    return list as LayerType[];
  }
  const pattern = f.positiveInt(
    'sliding_window_pattern',
    new FieldReader(t, where).positiveInt('_sliding_window_pattern', DEFAULTS.slidingWindowPattern),
  );
  return Array.from({ length: numLayers }, (_, i) => ((i + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention'));
}
