/**
 * Element types of tensors, with no GPU and no model in sight (engine floor 0): the dtype names,
 * the block layout of each (elements and bytes per block, from ggml's table in ggml-types.ts), and
 * decoding f16 / bf16 / f32 little-endian bytes to f32 and back (round to nearest even) for tests,
 * model making and adapters written back to files.
 *
 * Shared by the loaders (safetensors, GGUF), WeightSet (1-D tensors are kept as f32 on the GPU), the
 * kernels (block sizes), and the reference forward (which runs in f32 on decoded weights). Not here:
 * the GPU packing of weights (model/weights) or the WGSL unpacking (kernels/packed-*.wgsl).
 */
import { ggmlType } from './ggml-types';

/** A plain float storage precision (safetensors' F32 / F16 / BF16). */
export type FloatDType = 'f32' | 'f16' | 'bf16';

/** A GGML block type (ggml's names, lowercase): `blockSize` elements stored in `typeSize` bytes
 *  (tensor/ggml-types.ts), dequantized in the kernels (kernels/packed-<type>.wgsl). */
export type BlockDType = 'q8_0' | 'q4_0' | 'q4_1' | 'q5_0' | 'q5_1' | 'q2_k' | 'q3_k' | 'q4_k' | 'q5_k' | 'q6_k';

/** Storage precision of a weight tensor as it sits in the file (and on the GPU, packed in u32). */
export type DType = FloatDType | BlockDType;

/** The block types Hearth can quantize to. */
export type QuantizeTarget = Extract<BlockDType, 'q8_0' | 'q4_k'>;
export const QUANTIZE_TARGETS: readonly QuantizeTarget[] = ['q8_0', 'q4_k'];

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

/** The GGML type name of a block dtype ('q4_k' -> 'Q4_K'), as model/quant/dequant.ts takes it. */
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

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE 754 binary16 bits -> f32 value (exact: every f16 is an f32). */
export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero and subnormals
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits -> f32 value: the top half of an f32. */
export function bf16BitsToF32(h: number): number {
  u32Scratch[0] = (h & 0xffff) << 16;
  return f32Scratch[0];
}

/** f32 -> binary16 bits, round to nearest even; overflow to infinity, NaN kept quiet. */
export function f32ToF16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  // Unbiased exponent re-biased for f16.
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal f16 (or zero): shift the implicit-1 mantissa right, rounding to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let h = mant >>> shift;
    if (rest > half || (rest === half && h & 1)) h += 1;
    return sign | h;
  }
  const rest = mant & 0x1fff;
  let h = (e << 10) | (mant >>> 13);
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h += 1; // may carry into the exponent: correct
  return sign | h;
}

/** f32 -> bfloat16 bits, round to nearest even; NaN stays NaN. */
export function f32ToBf16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return ((x >>> 16) | 0x40) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The plain float dtype, or a clear error for a block type (those decode in model/quant/dequant.ts). */
export function floatDtype(dtype: DType, what: string): FloatDType {
  if (isBlockDType(dtype)) throw new Error(`${what}: ${dtype} is a block type (model/quant/dequant.ts decodes it)`);
  return dtype;
}

/** Little-endian bytes of `dtype` -> f32 values. `count` defaults to what the bytes hold. */
export function decodeToF32(bytes: Uint8Array, blockOrFloat: DType, count?: number): Float32Array {
  const dtype = floatDtype(blockOrFloat, 'decodeToF32');
  const n = count ?? bytes.byteLength / bytesPerElement(dtype);
  if (n * bytesPerElement(dtype) > bytes.byteLength) {
    throw new Error(`decodeToF32: ${n} ${dtype} elements need ${n * bytesPerElement(dtype)} bytes, got ${bytes.byteLength}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  if (dtype === 'f32') {
    for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  } else if (dtype === 'f16') {
    for (let i = 0; i < n; i++) out[i] = f16BitsToF32(view.getUint16(2 * i, true));
  } else {
    for (let i = 0; i < n; i++) out[i] = bf16BitsToF32(view.getUint16(2 * i, true));
  }
  return out;
}

/** f32 values -> little-endian bytes of `dtype` (rounded to nearest even for f16 / bf16). */
export function encodeFromF32(values: ArrayLike<number>, blockOrFloat: DType): Uint8Array {
  const dtype = floatDtype(blockOrFloat, 'encodeFromF32');
  const n = values.length;
  const out = new Uint8Array(n * bytesPerElement(dtype));
  const view = new DataView(out.buffer);
  if (dtype === 'f32') {
    for (let i = 0; i < n; i++) view.setFloat32(4 * i, values[i], true);
  } else if (dtype === 'f16') {
    for (let i = 0; i < n; i++) view.setUint16(2 * i, f32ToF16Bits(values[i]), true);
  } else {
    for (let i = 0; i < n; i++) view.setUint16(2 * i, f32ToBf16Bits(values[i]), true);
  }
  return out;
}

/** Values as they read back after storing them in `dtype` (what a kernel sees after unpacking). */
export function roundToDtype(values: ArrayLike<number>, dtype: DType): Float32Array {
  return decodeToF32(encodeFromF32(values, dtype), dtype);
}
