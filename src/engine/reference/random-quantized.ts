/**
 * Random quantized weights for tests and benchmarks: a packed-matrix-sized tensor of random GGML
 * blocks (reference/random-blocks.ts) in a block dtype, and a random model (reference/random-model.ts)
 * whose matrices are such blocks, chosen per tensor like a GGUF file's mix (Q4_K with Q6_K, Q8_0...).
 * `dequantizedTensor` is the same tensor in f32, what the reference forward reads.
 *
 * Not a quantizer (values are not those of the f32 model; any block is valid), not a file writer.
 */
import type { DType } from '../tensor/dtype';
import type { ModelConfig } from '../model/config/model-config';
import { tensorFromF32 } from '../tensor/tensor-data';
import { ggmlName, isBlockDType } from '../tensor/dtype';
import { type TensorData } from '../tensor/tensor-data';
import { dequantizeTensor } from '../model/quant/dequant';
import { Rng } from '../tensor/random';
import { randomBlocks } from './random-blocks';
import { randomModelTensors } from './random-model';

/** A [rows, cols] tensor of random blocks of `dtype` whose values stay within about ±amplitude. */
export function randomBlockTensor(name: string, dtype: DType, rows: number, cols: number, amplitude: number, rng: Rng): TensorData {
  if (!isBlockDType(dtype)) return tensorFromF32(name, [rows, cols], rng.normals(rows * cols, amplitude / 2), dtype);
  return { name, dtype, shape: [rows, cols], data: randomBlocks(ggmlName(dtype), rows * cols, amplitude, rng) };
}

/**
 * The random model of `cfg` with every matrix (2-D tensor) in `dtypeOf(name)`: block types as random
 * blocks scaled like the f32 model's weights (values within ±sqrt(3 / in), variance about 1 / in; the
 * embedding within ±2), plain floats as randomModelTensors makes them. 1-D tensors stay f32.
 */
export function randomQuantizedModel(cfg: ModelConfig, dtypeOf: (name: string) => DType, seed: number): TensorData[] {
  const rng = new Rng(seed ^ 0x51ab);
  return randomModelTensors(cfg, 'f32', seed).map((t) => {
    if (t.shape.length !== 2) return t;
    const dtype = dtypeOf(t.name);
    const [rows, cols] = t.shape;
    if (!isBlockDType(dtype)) return tensorFromF32(t.name, t.shape, dequantizeTensor(t), dtype);
    const embedding = t.name === 'model.embed_tokens.weight' || t.name === 'lm_head.weight';
    return randomBlockTensor(t.name, dtype, rows, cols, embedding ? 2 : Math.sqrt(3 / cols), rng);
  });
}

/** The tensor in f32 (block types dequantized as llama.cpp does). */
export function dequantizedTensor(t: TensorData): TensorData {
  return tensorFromF32(t.name, t.shape, dequantizeTensor(t), 'f32');
}
