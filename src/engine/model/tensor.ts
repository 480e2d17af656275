/**
 * TensorData: one named tensor as it comes out of a file: the contract between the loaders
 * (safetensors, sharded repos, PEFT adapters) and everything that consumes weights (WeightSet upload,
 * the reference forward, the trainer). Names are the HF / PEFT keys, unchanged.
 */
import type { DType } from './config';

export interface TensorData {
  name: string;
  dtype: DType;
  /** Row-major shape, outermost first (HF nn.Linear weight: [out, in]). */
  shape: number[];
  /** Raw little-endian bytes, exactly numel * bytesPerElement(dtype). */
  data: Uint8Array;
}

export function bytesPerElement(dtype: DType): number {
  return dtype === 'f32' ? 4 : 2;
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
