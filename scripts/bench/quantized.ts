/**
 * Weight formats of the bench's random shapes (bench-models.ts): `<shape>@<format>` names a model
 * whose matrices are stored as `format`, e.g. `qwen2.5-0.5b@q4_k`. Formats: bf16 (the default), f16,
 * GGML block types as llama.cpp writes them, and `q4_k_m`, llama.cpp's Q4_K_M mix. A K-quant
 * (256-element super-blocks) falls back, like llama.cpp's quantizer, to a 32-element type for a
 * matrix whose rows are not whole super-blocks (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K /
 * Q3_K -> Q4_0; SmolLM2-135M's and Qwen2.5-0.5B's hidden sizes 576 and 896 are such rows). Values
 * are random blocks: only the bytes a decode step reads matter to the bench.
 *
 * Environment-agnostic (no Node imports). Not here: the measurements (generation.ts), the table
 * (report.ts), GGUF files of these formats (peer-models.ts).
 */
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { blockLayout, ggmlName, isBlockDType, tensorBytes } from '../../src/engine/tensor/dtype';
import { numel, type TensorData } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { Rng } from '../../src/engine/tensor/random';
import { randomBlocks } from '../../src/engine/reference/random-blocks';

/** A stored format: a dtype for every matrix, or `q4_k_m`, llama.cpp's Q4_K_M choice per tensor. */
export type BenchFormat = DType | 'q4_k_m';

/** The formats the quantized bench section compares (issue 11). */
export const QUANTIZED_BENCH_FORMATS: BenchFormat[] = ['bf16', 'q8_0', 'q4_k'];

/** The shapes the quantized bench section runs. */
export const QUANTIZED_BENCH_SHAPES = ['smollm2-135m', 'qwen2.5-0.5b'];

const K_FALLBACK: Partial<Record<DType, DType>> = { q2_k: 'q4_0', q3_k: 'q4_0', q4_k: 'q5_0', q5_k: 'q5_1', q6_k: 'q8_0' };

/** `name@format` -> the shape's name and the format (bf16 without a suffix). */
export function parseBenchModel(name: string): { shape: string; format: BenchFormat } {
  const [shape, format = 'bf16'] = name.split('@', 2);
  if (format !== 'bf16' && format !== 'f16' && format !== 'q4_k_m' && !isBlockDType(format as DType))
    throw new Error(`bench: unknown weight format ${format} in ${name}`);
  return { shape, format: format as BenchFormat };
}

/** The dtype a matrix of `cols` columns gets in `format` (llama.cpp's fallback for partial super-blocks). */
export function matrixDtype(format: DType, cols: number): DType {
  if (!isBlockDType(format) || cols % blockLayout(format).blockSize === 0) return format;
  const fallback = K_FALLBACK[format];
  if (!fallback) throw new Error(`bench: ${cols} columns are not whole ${format} blocks`);
  return fallback;
}

/** llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third between. */
function useMoreBits(layer: number, layers: number): boolean {
  return layer < layers / 8 || layer >= (7 * layers) / 8 || (layer - Math.floor(layers / 8)) % 3 === 2;
}

/**
 * The dtype of the matrix `name` (HF name, [rows, cols]) in `format`. For q4_k_m, llama.cpp's
 * llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M: the output matrix (a tied embedding is the
 * output) Q6_K; v_proj and down_proj Q6_K in the layers use_more_bits picks, Q4_K elsewhere; every
 * other matrix Q4_K; then the fallback for partial super-blocks.
 */
export function tensorDtype(format: BenchFormat, name: string, cols: number, config: ModelConfig): DType {
  if (format !== 'q4_k_m') return matrixDtype(format, cols);
  const layer = /\.layers\.(\d+)\./.exec(name);
  const isOutput = name === 'lm_head.weight' || (config.tieWordEmbeddings && name === 'model.embed_tokens.weight');
  const moreBits = layer !== null && /\.(v_proj|down_proj)\.weight$/.test(name) && useMoreBits(Number(layer[1]), config.numLayers);
  return matrixDtype(isOutput || moreBits ? 'q6_k' : 'q4_k', cols);
}

/** Bytes a decode step reads per token: every matrix once (a tied embedding as lm_head), vectors in f32. */
export function weightBytesPerToken(config: ModelConfig, format: BenchFormat): number {
  return planParameters(config).reduce((s, { name, shape }) => {
    const n = numel(shape);
    return s + (shape.length === 2 ? tensorBytes(tensorDtype(format, name, shape[1], config), n)! : 4 * n);
  }, 0);
}

/** The model's tensors with every matrix as random values of its dtype in `format`; 1-D tensors f32. */
export function* randomFormatTensors(config: ModelConfig, format: BenchFormat, seed: number): Generator<TensorData> {
  const rng = new Rng(seed);
  for (const { name, shape } of planParameters(config)) {
    const n = numel(shape);
    if (shape.length === 1) {
      const values = Float32Array.from({ length: n }, () => (name.endsWith('norm.weight') ? 1 : 0) + 0.1 * (rng.uniform() - 0.5));
      yield { name, dtype: 'f32', shape, data: new Uint8Array(values.buffer) };
      continue;
    }
    const dtype = tensorDtype(format, name, shape[1], config);
    const typeName = isBlockDType(dtype) ? ggmlName(dtype) : dtype.toUpperCase();
    yield { name, dtype, shape, data: randomBlocks(typeName, n, Math.sqrt(3 / shape[1]), rng) };
  }
}
