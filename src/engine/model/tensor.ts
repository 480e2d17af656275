/**
 * TensorData: one named tensor as it comes out of a file: the contract between the loaders
 * (safetensors, sharded repos, PEFT adapters, GGUF) and everything that consumes weights (WeightSet
 * upload, the reference forward, the trainer). Names are the HF / PEFT keys, unchanged.
 *
 * Also the byte sizes of the dtypes: plain floats have a size per element, GGML block types a size
 * per block of elements (model/gguf/ggml-types.ts holds ggml's table).
 */
import type { BlockDType, DType, FloatDType } from './config';
import { ggmlType } from './gguf/ggml-types';

export interface TensorData {
  name: string;
  dtype: DType;
  /** Row-major shape, outermost first (HF nn.Linear weight: [out, in]). */
  shape: number[];
  /** Raw little-endian bytes, exactly tensorBytes(dtype, numel) (whole blocks for block types). */
  data: Uint8Array;
}

const BLOCK_DTYPES: ReadonlySet<string> = new Set<BlockDType>([
  'q8_0',
  'q4_0',
  'q4_1',
  'q5_0',
  'q5_1',
  'q2_k',
  'q3_k',
  'q4_k',
  'q5_k',
  'q6_k',
]);

export function isBlockDType(dtype: DType): dtype is BlockDType {
  return BLOCK_DTYPES.has(dtype);
}

/** Elements per block and bytes per block of a dtype (1 and the element size for plain floats). */
export function blockLayout(dtype: DType): { blockSize: number; typeSize: number } {
  if (!isBlockDType(dtype)) return { blockSize: 1, typeSize: bytesPerElement(dtype) };
  const t = ggmlType(ggmlName(dtype));
  return { blockSize: t.blockSize, typeSize: t.typeSize };
}

/** The GGML type name of a block dtype ('q4_k' -> 'Q4_K'), as reference/dequant.ts takes it. */
export function ggmlName(dtype: BlockDType): string {
  return dtype.toUpperCase();
}

export function bytesPerElement(dtype: FloatDType): number {
  return dtype === 'f32' ? 4 : 2;
}

/** Bytes of `elements` elements of `dtype`; null when they are not whole blocks of a block type. */
export function tensorBytes(dtype: DType, elements: number): number | null {
  const { blockSize, typeSize } = blockLayout(dtype);
  return elements % blockSize === 0 ? (elements / blockSize) * typeSize : null;
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
