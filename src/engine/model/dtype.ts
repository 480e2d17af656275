/**
 * Weight element types on the CPU: decoding f16 / bf16 / f32 little-endian bytes to f32, and the
 * reverse (round to nearest even) for tests, model making and adapters written back to files.
 *
 * Shared by the loader (safetensors), WeightSet (1-D tensors are kept as f32 on the GPU), and the
 * reference forward (which runs in f32 on decoded weights). Not here: the GPU packing of weights
 * (model/weights.ts) or the WGSL unpacking (kernels/packed-*.wgsl).
 */
import type { DType, FloatDType } from './config';
import type { TensorData } from './tensor';
import { bytesPerElement, isBlockDType, numel } from './tensor';

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

/** The plain float dtype, or a clear error for a block type (those decode in reference/dequant.ts). */
function floatDtype(dtype: DType, what: string): FloatDType {
  if (isBlockDType(dtype)) throw new Error(`${what}: ${dtype} is a block type (reference/dequant.ts decodes it)`);
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

/**
 * A tensor's elements as f32 (any plain float dtype), checking the byte count against the shape. Block
 * types decode through reference/dequant.ts (`dequantizeTensor`): this module cannot import it.
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
