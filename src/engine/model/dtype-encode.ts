/**
 * f32 -> f16 / bf16 bit patterns, round to nearest even, as torch's `.to(torch.float16)` and
 * `.to(torch.bfloat16)` do. Used to write weights in file precision: the bundled models
 * (scripts/model-making), tests, and later PEFT adapters saved by the trainer.
 * Not here: decoding f16/bf16 to f32 (dtype.ts, owned by the kernels side).
 */
import type { DType } from './config';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** bf16 = the top 16 bits of the f32, rounded to nearest even; NaN stays a quiet NaN. */
export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x0040) & 0xffff;
  const roundingBias = 0x7fff + ((bits >>> 16) & 1);
  return ((bits + roundingBias) >>> 16) & 0xffff;
}

/** IEEE half precision: 1 sign, 5 exponent (bias 15), 10 mantissa bits; subnormals kept, overflow -> inf. */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf or NaN
  const e = exp - 127 + 15; // rebias
  if (e >= 0x1f) return sign | 0x7c00; // too large: inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit 1 into place, then round.
    if (e < -10) return sign; // below half the smallest subnormal: rounds to zero
    mant |= 0x800000;
    const shift = 14 - e; // 13 bits of f32->f16 mantissa difference + (1 - e)
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const midpoint = 1 << (shift - 1);
    const up = rest > midpoint || (rest === midpoint && (half & 1) === 1);
    return sign | (half + (up ? 1 : 0));
  }
  const half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  const up = rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1);
  // A carry out of the mantissa correctly bumps the exponent (and reaches inf at the top).
  return sign | (half + (up ? 1 : 0));
}

/** Encodes f32 values as little-endian bytes in the given file dtype. */
export function encodeFloats(values: ArrayLike<number>, dtype: DType): Uint8Array {
  if (dtype === 'f32') {
    const out = new Float32Array(values.length);
    out.set(values);
    return new Uint8Array(out.buffer);
  }
  const out = new Uint16Array(values.length);
  const encode = dtype === 'f16' ? f32ToF16Bits : f32ToBf16Bits;
  for (let i = 0; i < values.length; i++) out[i] = encode(values[i]);
  // Uint16Array is little-endian on every platform WebGPU runs on, as safetensors requires.
  return new Uint8Array(out.buffer);
}
