/**
 * ModelConfig: the engine's own, normalised view of a Hugging Face `config.json`.
 *
 * Every kernel, the reference, the loader and the trainer read shapes from this type and
 * nothing else; `parseModelConfig` (hf-config.ts) builds it from the HF file and rejects what the
 * engine cannot run. Names follow llm.c's short math names where they are dimensions.
 * Not here: tokenizer and generation defaults (see generation-config.ts / text/tokenizer.ts).
 */
import type { DType } from '../../tensor/dtype';
import type { MlpActivation } from '../../kernels/swiglu';

/** The decoder families Hearth runs; they differ only in the flags below. */
export type Architecture = 'llama' | 'qwen2' | 'qwen3' | 'phi3' | 'smollm3' | 'gemma3';

/** Llama 3.x frequency-dependent RoPE scaling (transformers `_compute_llama3_parameters`). */
export interface Llama3RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

/** Plain linear position scaling (`rope_type: "linear"`): positions divided by factor. */
export interface LinearRopeScaling {
  type: 'linear';
  factor: number;
}

/** Per-frequency divisors, as GGUF files carry Llama 3's scaling (`rope_freqs.weight`, HS/2 values):
 *  inv_freq[i] / factors[i] (llama.cpp's `freq_factors`). */
export interface FreqFactorsRopeScaling {
  type: 'freq_factors';
  factors: readonly number[];
}

/**
 * Phi-3 LongRoPE (`rope_type: "longrope"`, older files `"su"`; transformers `_compute_longrope_parameters`):
 * inv_freq[i] / factor[i], with the short factors while positions stay below
 * originalMaxPositionEmbeddings and the long ones beyond; cos and sin are both multiplied by
 * attentionFactor. One entry per rotated frequency (rotaryDim / 2).
 */
export interface LongRopeScaling {
  type: 'longrope';
  shortFactor: readonly number[];
  longFactor: readonly number[];
  originalMaxPositionEmbeddings: number;
  attentionFactor: number;
}

export type RopeScaling = Llama3RopeScaling | LinearRopeScaling | FreqFactorsRopeScaling | LongRopeScaling;

/** How a layer attends (transformers' `layer_types`): to every earlier token, or to the last
 *  `slidingWindow` tokens only. */
export type LayerType = 'full_attention' | 'sliding_attention';

export interface ModelConfig {
  /** HF `architectures[0]` mapped to a family. */
  arch: Architecture;
  /** hidden_size (C in llm.c's legend). */
  hiddenSize: number;
  /** num_hidden_layers (L). */
  numLayers: number;
  /** num_attention_heads (NH). */
  numHeads: number;
  /** num_key_value_heads (GQA; equals numHeads when absent in the file). */
  numKvHeads: number;
  /** head_dim (HS); explicit in Qwen3, otherwise hiddenSize / numHeads. */
  headDim: number;
  /** intermediate_size of the SwiGLU MLP. */
  intermediateSize: number;
  /** vocab_size (V): rows of the embedding and of lm_head. */
  vocabSize: number;
  /** rms_norm_eps. */
  rmsNormEps: number;
  /** rope_theta (base of inv_freq = theta^(-2i/HS)). */
  ropeTheta: number;
  /** rope_scaling / rope_parameters, when the model uses one. */
  ropeScaling: RopeScaling | null;
  /**
   * Leading dims of each q/k head that RoPE rotates (Phi-3 `partial_rotary_factor` * head_dim); the
   * rest pass through. Absent: headDim (model/config/rope.ts `rotaryDim`).
   */
  rotaryDim?: number;
  /** Per layer, whether RoPE is applied (SmolLM3 `no_rope_layers`, 1 = rotate). Absent: every layer. */
  ropeLayers?: readonly boolean[];
  /**
   * The checkpoint stores q|k|v as one `self_attn.qkv_proj` and gate|up as one `mlp.gate_up_proj`
   * (Phi-3), so the tensors, LoRA targets and PEFT names are the fused modules. Absent: false.
   */
  fusedProjections?: boolean;
  /**
   * sliding_window: a 'sliding_attention' layer's query at position p sees keys at positions
   * p - slidingWindow + 1 ..= p (transformers' `sliding_window_causal` mask); null without one.
   */
  slidingWindow: number | null;
  /** One entry per layer; all 'full_attention' when slidingWindow is null. */
  layerTypes: readonly LayerType[];
  /** max_position_embeddings: the context length the model was trained for. */
  maxPositionEmbeddings: number;
  /** tie_word_embeddings: lm_head reuses model.embed_tokens.weight. */
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry a bias (Qwen2: always; Llama: attention_bias). */
  attentionBias: boolean;
  /** o_proj carries a bias (Llama attention_bias only; never in Qwen2/Qwen3). */
  outputBias: boolean;
  /** gate/up/down carry a bias (Llama mlp_bias). */
  mlpBias: boolean;
  /** Qwen3: per-head RMSNorm on q and k (q_norm / k_norm) before RoPE. */
  qkNorm: boolean;
  /** The MLP's gate activation: SiLU (SwiGLU) or Gemma's tanh-approximated GELU (GeGLU, "gelu_pytorch_tanh"). */
  hiddenAct: MlpActivation;
  /** Token ids from config.json (generation_config.json and the tokenizer may add more). */
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** torch_dtype from the file, informative only: each tensor carries its own dtype. */
  torchDtype: DType | null;

  // Gemma 3 (transformers modeling_gemma3.py; llama.cpp src/models/gemma3.cpp). Absent in the other
  // families, which behave as the defaults say.
  /** RMSNorm multiplies by (normWeightOffset + w): 1 in Gemma ("x * (1 + w)"); default 0. */
  normWeightOffset?: number;
  /** Token embeddings are multiplied by this (Gemma: sqrt(hidden_size), applied in f32, see
   *  embeddingScaleOf); default 1. */
  embeddingScale?: number;
  /** Gemma's sandwich norms: post_attention_layernorm on the attention output and post_feedforward_layernorm
   *  on the MLP output before each residual add, pre_feedforward_layernorm before the MLP. */
  sandwichNorms?: boolean;
  /** Softmax scale of q.k (Gemma: query_pre_attn_scalar^-1/2); default 1/sqrt(headDim). */
  attentionScale?: number;
  /** RoPE base of 'sliding_attention' layers (Gemma's rope_local_base_freq, no scaling); default: ropeTheta with ropeScaling. */
  ropeLocalTheta?: number;
  /** A multimodal checkpoint (Gemma3ForConditionalGeneration): the text model's tensors sit under
   *  `language_model.` (or `model.language_model.`), the vision tower's are skipped (checkpointTensorName). */
  multimodalCheckpoint?: boolean;
}
