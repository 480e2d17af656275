/**
 * The models `npm run bench` measures generation on: the bundled default model (its real files), and
 * random bf16 weights with the exact shapes of SmolLM2-135M, Qwen2.5-0.5B, Gemma-3-270M and Gemma-3-1B
 * (their config.json; Gemma's 262k vocabulary exercises the row-chunked lm_head and the sampler),
 * made in memory one tensor at a time as the upload consumes them (a 0.5B model is never held
 * whole). The random models borrow the bundled model's tokenizer and template: the bench feeds
 * token ids, so only the shapes matter.
 *
 * Environment-agnostic (no Node imports): the same code runs in Node over Dawn and in a Chromium page.
 * Not here: the measurements (generation.ts).
 */
import { bundledSource, type CatalogEntry } from '../../src/engine/model/sources/catalog';
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { loadModelFiles, type LoadedModelFiles } from '../../src/engine/model/files/repo';
import { tensorBytes } from '../../src/engine/tensor/dtype';
import { type TensorData } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { parseBenchModel, randomFormatTensors, tensorDtype, weightBytesPerToken, type BenchFormat } from './quantized';

export const BUNDLED_ID = 'hearth/tiny-chat';

const LAYER_TYPES_270M = Array.from({ length: 18 }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention'));

/** google/gemma-3-270m's config.json (the fields the engine reads). */
const GEMMA_3_270M: Record<string, unknown> = {
  architectures: ['Gemma3ForCausalLM'],
  model_type: 'gemma3_text',
  hidden_size: 640,
  intermediate_size: 2048,
  num_hidden_layers: 18,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  head_dim: 256,
  query_pre_attn_scalar: 256,
  vocab_size: 262144,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  rope_local_base_freq: 10000,
  sliding_window: 512,
  layer_types: LAYER_TYPES_270M,
  hidden_activation: 'gelu_pytorch_tanh',
  torch_dtype: 'bfloat16',
};

/** config.json of the benchmarked shapes (HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B, google/gemma-3-270m,
 *  google/gemma-3-1b-it); the training bench uses them too. */
export const BENCH_SHAPES: Record<string, Record<string, unknown>> = {
  'smollm2-135m': {
    architectures: ['LlamaForCausalLM'],
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: 30,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    vocab_size: 49152,
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    torch_dtype: 'bfloat16',
  },
  'qwen2.5-0.5b': {
    architectures: ['Qwen2ForCausalLM'],
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    vocab_size: 151936,
    max_position_embeddings: 32768,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    torch_dtype: 'bfloat16',
  },
  // meta-llama/Llama-3.2-1B-Instruct (the peers section's largest shape).
  'llama-3.2-1b': {
    architectures: ['LlamaForCausalLM'],
    hidden_size: 2048,
    intermediate_size: 8192,
    num_hidden_layers: 16,
    num_attention_heads: 32,
    num_key_value_heads: 8,
    head_dim: 64,
    vocab_size: 128256,
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-5,
    rope_theta: 500000,
    rope_scaling: { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    tie_word_embeddings: true,
    hidden_act: 'silu',
    torch_dtype: 'bfloat16',
  },
  'gemma-3-270m': GEMMA_3_270M,
  // google/gemma-3-1b-it: the 270M's fields at other sizes, and the older every-6th-global pattern key.
  'gemma-3-1b': {
    ...GEMMA_3_270M,
    hidden_size: 1152,
    intermediate_size: 6912,
    num_hidden_layers: 26,
    layer_types: undefined,
    sliding_window_pattern: 6,
  },
};

/** The generation section's default models (the peers section adds llama-3.2-1b: peers.ts). */
export const GENERATION_BENCH_MODELS = ['tiny-chat', 'smollm2-135m', 'qwen2.5-0.5b', 'gemma-3-270m', 'gemma-3-1b'];

const BUNDLED: CatalogEntry = {
  id: BUNDLED_ID,
  path: 'models/tiny-chat/',
  architecture: 'llama',
  parameters: 0,
  bytes: 1,
  default: true,
  description: '',
  files: ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
};

/** The bundled model's files (baseUrl: the page's origin in a browser; omitted in Node: public/ on disk). */
export function bundledFiles(baseUrl?: string): Promise<LoadedModelFiles> {
  return loadModelFiles(bundledSource(BUNDLED, { baseUrl }));
}

/** Random bf16 values with the variance of N(0, 1/in) (uniform: fast for 0.5B values). */
export function* randomBf16Tensors(cfg: ModelConfig, seed: number): Generator<TensorData> {
  let s = seed >>> 0 || 1;
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (const { name, shape } of planParameters(cfg)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const bytes = new Uint8Array(2 * n);
    const half = new Uint16Array(bytes.buffer);
    const isNorm = name.endsWith('norm.weight');
    // Norm weights near 1 as the kernels apply them (Gemma stores w of x * (1 + w), near 0).
    const normCenter = 1 - (cfg.normWeightOffset ?? 0);
    const scale = isNorm ? 0.2 : name.endsWith('.bias') ? 0.1 : Math.sqrt(3 / (shape.length > 1 ? shape[1] : 1));
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      f[0] = (isNorm ? normCenter : 0) + scale * (2 * ((s >>> 0) / 4294967296) - 1);
      half[i] = u[0] >>> 16;
    }
    yield { name, dtype: 'bf16', shape, data: bytes };
  }
}

export interface BenchModel {
  /** Name in the results (tiny-chat, smollm2-135m, qwen2.5-0.5b). */
  name: string;
  files: LoadedModelFiles;
  parameters: number;
  /** Layers of the real model (the bench may keep fewer). */
  totalLayers: number;
  /** Bytes of weights a decode step reads per token (every matrix once, file precision). */
  weightBytes: number;
}

/** The model `name` for the bench; `layers` keeps only the first layers of a random shape (quick runs). */
export async function benchModel(name: string, opts: { baseUrl?: string; layers?: number } = {}): Promise<BenchModel> {
  const tiny = await bundledFiles(opts.baseUrl);
  if (name === 'tiny-chat') {
    const parameters = tiny.weights.reduce((s, w) => s + w.shape.reduce((a, b) => a * b, 1), 0);
    return { name, files: tiny, parameters, totalLayers: tiny.config.numLayers, weightBytes: tiny.weightBytes };
  }
  const { shape: shapeName, format } = parseBenchModel(name);
  const shape = BENCH_SHAPES[shapeName];
  if (!shape) throw new Error(`bench: unknown model ${name} (${GENERATION_BENCH_MODELS.join(', ')}, each also as <name>@q8_0 or @q4_k)`);
  const full = parseModelConfig(shape);
  const numLayers = Math.min(full.numLayers, opts.layers ?? full.numLayers);
  const config: ModelConfig = { ...full, numLayers, layerTypes: full.layerTypes.slice(0, numLayers) };
  const plan = planParameters(config);
  const parameters = plan.reduce((s, p) => s + p.shape.reduce((a, b) => a * b, 1), 0);
  if (format !== 'bf16') return quantizedBenchModel(name, tiny, config, format, parameters, full.numLayers);
  const files: LoadedModelFiles = {
    ...tiny,
    sourceId: `random/${name}`,
    config,
    eosTokenIds: [],
    weights: plan.map((p) => ({
      name: p.name,
      dtype: 'bf16',
      shape: p.shape,
      file: 'random',
      bytes: 2 * p.shape.reduce((a, b) => a * b, 1),
    })),
    weightBytes: 2 * parameters,
    async *tensors() {
      yield* randomBf16Tensors(config, 7);
    },
  };
  return { name, files, parameters, totalLayers: full.numLayers, weightBytes: 2 * parameters };
}

/** A random shape with its matrices in a GGML block format (quantized.ts), 1-D tensors in f32. */
function quantizedBenchModel(
  name: string,
  tiny: LoadedModelFiles,
  config: ModelConfig,
  format: BenchFormat,
  parameters: number,
  totalLayers: number,
): BenchModel {
  const weights = planParameters(config).map((p) => {
    const n = p.shape.reduce((a, b) => a * b, 1);
    const dtype: DType = p.shape.length === 2 ? tensorDtype(format, p.name, p.shape[1], config) : 'f32';
    return { name: p.name, dtype, shape: p.shape, file: 'random', bytes: tensorBytes(dtype, n)! };
  });
  const files: LoadedModelFiles = {
    ...tiny,
    sourceId: `random/${name}`,
    config,
    eosTokenIds: [],
    weights,
    weightBytes: weights.reduce((s, w) => s + w.bytes, 0),
    async *tensors() {
      yield* randomFormatTensors(config, format, 7);
    },
  };
  return { name, files, parameters, totalLayers, weightBytes: weightBytesPerToken(config, format) };
}
