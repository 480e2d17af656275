import { describe, expect, it } from 'vitest';
import {
  bf16BitsToF32,
  decodeToF32,
  encodeFromF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  roundToDtype,
} from '../../../src/engine/tensor/dtype';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';

describe('f16 / bf16 decoding', () => {
  it('decodes known f16 bit patterns', () => {
    expect(f16BitsToF32(0x3c00)).toBe(1);
    expect(f16BitsToF32(0xc000)).toBe(-2);
    expect(f16BitsToF32(0x7bff)).toBe(65504); // largest finite half
    expect(f16BitsToF32(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(f16BitsToF32(0x3555)).toBeCloseTo(0.33325195, 8);
    expect(f16BitsToF32(0x7c00)).toBe(Infinity);
    expect(f16BitsToF32(0xfc00)).toBe(-Infinity);
    expect(f16BitsToF32(0x7e00)).toBeNaN();
    expect(Object.is(f16BitsToF32(0x8000), -0)).toBe(true);
  });

  it('decodes known bf16 bit patterns', () => {
    expect(bf16BitsToF32(0x3f80)).toBe(1);
    expect(bf16BitsToF32(0xc040)).toBe(-3);
    expect(bf16BitsToF32(0x4049)).toBe(3.140625);
    expect(bf16BitsToF32(0x7f80)).toBe(Infinity);
  });

  it('rounds to nearest even when encoding', () => {
    // 1 + 2^-11 is halfway between two halves: ties to the even mantissa (1.0).
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00);
    // 1 + 3 * 2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f32ToF16Bits(70000)).toBe(0x7c00); // overflow
    expect(f32ToF16Bits(2 ** -25)).toBe(0); // half of the smallest subnormal ties to zero
    expect(f32ToF16Bits(3 * 2 ** -25)).toBe(0x0002);
    expect(f32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80); // tie to even
    expect(f32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(bf16BitsToF32(f32ToBf16Bits(NaN))).toBeNaN();
  });

  it('round-trips every f16 value and random bf16 values through bytes', () => {
    const all = new Float32Array(0x7c00);
    for (let h = 0; h < 0x7c00; h++) all[h] = f16BitsToF32(h);
    expect(Array.from(roundToDtype(all, 'f16'))).toEqual(Array.from(all));
    const bytes = encodeFromF32([1.5, -0.25, 3.0e38], 'bf16');
    expect(bytes.byteLength).toBe(6);
    expect(Array.from(decodeToF32(bytes, 'bf16'))).toEqual([1.5, -0.25, bf16BitsToF32(f32ToBf16Bits(3.0e38))]);
  });

  it('checks the byte count of a tensor against its shape', () => {
    const t = { name: 'w', dtype: 'f16' as const, shape: [2, 3], data: new Uint8Array(10) };
    expect(() => tensorToF32(t)).toThrow(/w: 10 bytes for shape \[2, 3\] f16 \(expected 12\)/);
    expect(tensorToF32({ ...t, data: encodeFromF32([1, 2, 3, 4, 5, 6], 'f16') })).toEqual(new Float32Array([1, 2, 3, 4, 5, 6]));
  });
});
