/**
 * TensorData: one named tensor as it comes out of a file: the contract between the loaders
 * (safetensors, sharded repos, PEFT adapters, GGUF) and everything that consumes weights (WeightSet
 * upload, the reference forward, the trainer). Names are the HF / PEFT keys, unchanged.
 * Not here: the dtypes' layouts and byte conversions (dtype.ts).
 */
import { bytesPerElement, decodeToF32, encodeFromF32, floatDtype, type DType } from './dtype';

export interface TensorData {
  name: string;
  dtype: DType;
  /** Row-major shape, outermost first (HF nn.Linear weight: [out, in]). */
  shape: number[];
  /** Raw little-endian bytes, exactly tensorBytes(dtype, numel) (whole blocks for block types). */
  data: Uint8Array;
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * A tensor's elements as f32 (any plain float dtype), checking the byte count against the shape. Block
 * types decode through model/quant/dequant.ts (`dequantizeTensor`), a floor above this one.
 */
export function tensorToF32(t: TensorData): Float32Array {
  const n = numel(t.shape);
  const dtype = floatDtype(t.dtype, `tensor ${t.name}`);
  if (t.data.byteLength !== n * bytesPerElement(dtype)) {
    throw new Error(
      `tensor ${t.name}: ${t.data.byteLength} bytes for shape [${t.shape.join(', ')}] ${dtype} (expected ${n * bytesPerElement(dtype)})`,
    );
  }
  return decodeToF32(t.data, dtype, n);
}

/** Builds a TensorData from f32 values, storing them in `dtype` (tests, model making). */
export function tensorFromF32(name: string, shape: number[], values: ArrayLike<number>, dtype: DType): TensorData {
  if (values.length !== numel(shape)) {
    throw new Error(`tensor ${name}: ${values.length} values for shape [${shape.join(', ')}]`);
  }
  return { name, dtype, shape: [...shape], data: encodeFromF32(values, dtype) };
}
