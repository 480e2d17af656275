/**
 * Weight formats of the bench's random shapes (bench-models.ts): `<shape>@<format>` names a model
 * whose matrices are stored as `format`, e.g. `qwen2.5-0.5b@q4_k`. Formats: bf16 (the default) and
 * GGML block types as llama.cpp writes them: a K-quant (256-element super-blocks) falls back, like
 * llama.cpp's quantizer, to a 32-element type for a matrix whose rows are not whole super-blocks
 * (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K -> Q4_0; SmolLM2-135M's and
 * Qwen2.5-0.5B's hidden sizes 576 and 896 are such rows). Values are random blocks: only the bytes a
 * decode step reads matter to the bench.
 *
 * Environment-agnostic (no Node imports). Not here: the measurements (generation.ts), the table
 * (report.ts).
 */
import type { DType, ModelConfig } from '../../src/engine/model/config';
import { blockLayout, ggmlName, isBlockDType, numel, tensorBytes, type TensorData } from '../../src/engine/model/tensor';
import { planParameters } from '../../src/engine/model/weights';
import { Rng } from '../../src/engine/reference/random';
import { randomBlocks } from '../../src/engine/reference/random-blocks';

/** The formats the quantized bench section compares (issue 11). */
export const QUANTIZED_BENCH_FORMATS: DType[] = ['bf16', 'q8_0', 'q4_k'];

/** The shapes the quantized bench section runs. */
export const QUANTIZED_BENCH_SHAPES = ['smollm2-135m', 'qwen2.5-0.5b'];

const K_FALLBACK: Partial<Record<DType, DType>> = { q2_k: 'q4_0', q3_k: 'q4_0', q4_k: 'q5_0', q5_k: 'q5_1', q6_k: 'q8_0' };

/** `name@format` -> the shape's name and the format (bf16 without a suffix). */
export function parseBenchModel(name: string): { shape: string; format: DType } {
  const [shape, format = 'bf16'] = name.split('@', 2);
  if (format !== 'bf16' && !isBlockDType(format as DType)) throw new Error(`bench: unknown weight format ${format} in ${name}`);
  return { shape, format: format as DType };
}

/** The dtype a matrix of `cols` columns gets in `format` (llama.cpp's fallback for partial super-blocks). */
export function matrixDtype(format: DType, cols: number): DType {
  if (cols % blockLayout(format).blockSize === 0) return format;
  const fallback = K_FALLBACK[format];
  if (!fallback) throw new Error(`bench: ${cols} columns are not whole ${format} blocks`);
  return fallback;
}

/** Bytes a decode step reads per token: every matrix once (a tied embedding as lm_head), vectors in f32. */
export function weightBytesPerToken(config: ModelConfig, format: DType): number {
  return planParameters(config).reduce((s, { shape }) => {
    const n = numel(shape);
    return s + (shape.length === 2 ? tensorBytes(matrixDtype(format, shape[1]), n)! : 4 * n);
  }, 0);
}

/** The model's tensors with every matrix as random blocks of its dtype in `format`; 1-D tensors f32. */
export function* randomFormatTensors(config: ModelConfig, format: DType, seed: number): Generator<TensorData> {
  const rng = new Rng(seed);
  for (const { name, shape } of planParameters(config)) {
    const n = numel(shape);
    if (shape.length === 1) {
      const values = Float32Array.from({ length: n }, () => (name.endsWith('norm.weight') ? 1 : 0) + 0.1 * (rng.uniform() - 0.5));
      yield { name, dtype: 'f32', shape, data: new Uint8Array(values.buffer) };
      continue;
    }
    const dtype = matrixDtype(format, shape[1]);
    if (!isBlockDType(dtype)) throw new Error(`bench: randomFormatTensors makes block types only, not ${dtype}`);
    yield { name, dtype, shape, data: randomBlocks(ggmlName(dtype), n, Math.sqrt(3 / shape[1]), rng) };
  }
}
