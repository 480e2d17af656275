/**
 * The bundled models: their config.json, generation_config.json, template, weight dtype and seed.
 * config.json objects are written as transformers writes them for each class, so the loader reads
 * them exactly like a Hub download.
 * - hearth/tiny-chat: the default model; Llama architecture, GQA 4/2, tied embeddings, bf16.
 *   make-models writes random weights; the demo training (scripts/train-demo*.ts) replaces them with
 *   trained ones in the same files and format.
 * - hearth/tiny-json: tiny-chat's files, with the weights of the demo's JSON stage
 *   (scripts/train-demo-json.ts) in place of make-models' random ones.
 * - hearth/tiny-qwen2: Qwen2 (q/k/v bias), untied lm_head, f16, odd MLP width; a Qwen2.5-style template.
 * - hearth/tiny-qwen3: Qwen3 (q/k norm, explicit head_dim 32 with hidden 64), tied, f32; a
 *   Qwen3-style template with tools and thinking, shipped as chat_template.jinja.
 */
import type { DType } from '../../src/engine/tensor/dtype';
import tinyChatTemplate from './templates/tiny-chat.jinja?raw';
import tinyQwen2Template from './templates/tiny-qwen2.jinja?raw';
import tinyQwen3Template from './templates/tiny-qwen3.jinja?raw';

export interface ModelSpec {
  id: string;
  folder: string;
  architecture: 'llama' | 'qwen2' | 'qwen3';
  description: string;
  isDefault: boolean;
  dtype: DType;
  seed: number;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
  chatTemplate: string;
  /** Ship the template as chat_template.jinja (newer transformers) instead of inside tokenizer_config.json. */
  templateFile: boolean;
  /**
   * The committed weights are trained ones (docs/training.md): make-models writes the random
   * initial weights, and its check compares the tensor table (names, dtypes, shapes) only.
   */
  trainedWeights: boolean;
}

export const VOCAB_SIZE = 4096;
const TRANSFORMERS_VERSION = '4.51.0';

const TINY_CHAT: ModelSpec = {
  id: 'hearth/tiny-chat',
  folder: 'tiny-chat',
  architecture: 'llama',
  description:
    "Hearth's default model, trained on the demo task: adding one-digit numbers, answered with the sum alone (docs/training.md, stages 1-3). Llama architecture (4 layers, hidden 256, GQA 4/2, tied embeddings, bf16), a byte-level BPE tokenizer with digit splitting, and a ChatML template with tools and documents; `npm run make-models` writes its random initial weights.",
  isDefault: true,
  dtype: 'bf16',
  seed: 0x7c0de01,
  config: {
    architectures: ['LlamaForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: null,
    eos_token_id: 2,
    head_dim: 64,
    hidden_act: 'silu',
    hidden_size: 256,
    initializer_range: 0.02,
    intermediate_size: 768,
    max_position_embeddings: 2048,
    mlp_bias: false,
    model_type: 'llama',
    num_attention_heads: 4,
    num_hidden_layers: 4,
    num_key_value_heads: 2,
    pretraining_tp: 1,
    rms_norm_eps: 1e-5,
    rope_scaling: null,
    rope_theta: 10000.0,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
    transformers_version: TRANSFORMERS_VERSION,
    use_cache: true,
    vocab_size: VOCAB_SIZE,
  },
  generationConfig: { eos_token_id: [2, 0], pad_token_id: 0, transformers_version: TRANSFORMERS_VERSION },
  chatTemplate: tinyChatTemplate,
  templateFile: false,
  trainedWeights: true,
};

/**
 * Stage 4 of docs/training.md, for structured outputs: a model of its own, so that the default
 * keeps its sums and plain replies (issue 27).
 */
const TINY_JSON: ModelSpec = {
  ...TINY_CHAT,
  id: 'hearth/tiny-json',
  folder: 'tiny-json',
  description:
    'tiny-chat trained further for structured outputs: small JSON objects (a person, a book, a list of pets) and one call of an add tool, so a JSON schema or tool_choice "required" finishes at temperature 1 (docs/training.md, stage 4). Same architecture, tokenizer and template as tiny-chat; it is worse at sums and opens plain replies with JSON, so use tiny-chat for those.',
  isDefault: false,
};

export const MODEL_SPECS: ModelSpec[] = [
  TINY_CHAT,
  TINY_JSON,
  {
    id: 'hearth/tiny-qwen2',
    folder: 'tiny-qwen2',
    architecture: 'qwen2',
    description:
      'Tiny random Qwen2 test model (2 layers, hidden 64, q/k/v bias, untied lm_head, f16) with a Qwen2.5-style template with tools.',
    isDefault: false,
    dtype: 'f16',
    seed: 0x7c0de02,
    config: {
      architectures: ['Qwen2ForCausalLM'],
      attention_dropout: 0.0,
      bos_token_id: 0,
      eos_token_id: 2,
      hidden_act: 'silu',
      hidden_size: 64,
      initializer_range: 0.02,
      intermediate_size: 176,
      max_position_embeddings: 32768,
      max_window_layers: 2,
      model_type: 'qwen2',
      num_attention_heads: 4,
      num_hidden_layers: 2,
      num_key_value_heads: 2,
      rms_norm_eps: 1e-6,
      rope_scaling: null,
      rope_theta: 1000000.0,
      sliding_window: 32768,
      tie_word_embeddings: false,
      torch_dtype: 'float16',
      transformers_version: TRANSFORMERS_VERSION,
      use_cache: true,
      use_sliding_window: false,
      vocab_size: VOCAB_SIZE,
    },
    generationConfig: {
      bos_token_id: 0,
      do_sample: true,
      eos_token_id: [2, 0],
      pad_token_id: 0,
      repetition_penalty: 1.05,
      temperature: 0.7,
      top_k: 20,
      top_p: 0.8,
      transformers_version: TRANSFORMERS_VERSION,
    },
    chatTemplate: tinyQwen2Template,
    templateFile: false,
    trainedWeights: false,
  },
  {
    id: 'hearth/tiny-qwen3',
    folder: 'tiny-qwen3',
    architecture: 'qwen3',
    description:
      'Tiny random Qwen3 test model (2 layers, hidden 64, explicit head_dim 32, q/k RMSNorm, tied, f32) with a Qwen3-style template with tools and thinking.',
    isDefault: false,
    dtype: 'f32',
    seed: 0x7c0de03,
    config: {
      architectures: ['Qwen3ForCausalLM'],
      attention_bias: false,
      attention_dropout: 0.0,
      bos_token_id: 0,
      eos_token_id: 2,
      head_dim: 32,
      hidden_act: 'silu',
      hidden_size: 64,
      initializer_range: 0.02,
      intermediate_size: 192,
      max_position_embeddings: 40960,
      max_window_layers: 2,
      model_type: 'qwen3',
      num_attention_heads: 4,
      num_hidden_layers: 2,
      num_key_value_heads: 2,
      rms_norm_eps: 1e-6,
      rope_scaling: null,
      rope_theta: 1000000,
      sliding_window: null,
      tie_word_embeddings: true,
      torch_dtype: 'float32',
      transformers_version: TRANSFORMERS_VERSION,
      use_cache: true,
      use_sliding_window: false,
      vocab_size: VOCAB_SIZE,
    },
    generationConfig: {
      bos_token_id: 0,
      do_sample: true,
      eos_token_id: [2, 0],
      pad_token_id: 0,
      temperature: 0.6,
      top_k: 20,
      top_p: 0.95,
      transformers_version: TRANSFORMERS_VERSION,
    },
    chatTemplate: tinyQwen3Template,
    templateFile: true,
    trainedWeights: false,
  },
];

/** The weight files (relative to public/models/) that the demo training replaced with trained ones. */
export const TRAINED_WEIGHT_FILES: ReadonlySet<string> = new Set(
  MODEL_SPECS.filter((s) => s.trainedWeights).map((s) => `${s.folder}/model.safetensors`),
);
