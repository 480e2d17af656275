// f16 rounding shared by the quantize-on-load kernels (quantize-q8_0.wgsl, quantize-q4_k.wgsl), in
// integer and exact f32 arithmetic only: WGSL division (2.5 ULP) and f32 -> f16 conversion
// (implementation-defined rounding) are not exact, and a block's f16 scale must be the one
// model/quant/quantize.ts stores. Reference: tensor/dtype.ts f32ToF16Bits.

// The f16 bits nearest to v >= 0, ties to even; inf from 65520 (tensor/dtype.ts f32ToF16Bits).
fn f16_bits(v: f32) -> u32 {
  let x = bitcast<u32>(v) & 0x7fffffffu;
  let exp = i32(x >> 23u);
  var mant = x & 0x7fffffu;
  if (exp == 255) {
    return 0x7c00u;
  }
  let e = exp - 127 + 15;
  if (e >= 31) {
    return 0x7c00u;
  }
  if (e <= 0) {
    if (e < -10) {
      return 0u;
    }
    mant = mant | 0x800000u;
    let shift = u32(14 - e);
    let half = 1u << (shift - 1u);
    let rest = mant & ((1u << shift) - 1u);
    var h = mant >> shift;
    if (rest > half || (rest == half && (h & 1u) == 1u)) {
      h += 1u;
    }
    return h;
  }
  let rest = mant & 0x1fffu;
  var h = (u32(e) << 10u) | (mant >> 13u);
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) {
    h += 1u; // may carry into the exponent: correct
  }
  return h;
}

// The value of non-negative f16 bits b, exactly (subnormals too, where unpack2x16float may flush);
// 0x7c00 reads as 65536, the value past the largest f16 that its rounding boundary is halfway to.
fn f16_value(b: u32) -> f32 {
  if (b >= 0x7c00u) {
    return 65536.0;
  }
  let e = b >> 10u;
  if (e == 0u) {
    return f32(b) * 5.9604644775390625e-8; // 2^-24
  }
  return bitcast<f32>(((e + 112u) << 23u) | ((b & 0x3ffu) << 13u));
}

// The f16 bits nearest to num / den (num >= 0, den a small integer <= 127), ties to even: the exact
// quotient's rounding, as model/quant/quantize.ts computes it in double. The approximate quotient's f16 is
// at most one step off; each step is checked against the midpoint, whose product with den is exact in
// f32 (12 significant bits times 7).
fn f16_of_quotient(num: f32, den: f32) -> u32 {
  var b = f16_bits(num / den);
  if (b < 0x7c00u) {
    let up = den * ((f16_value(b) + f16_value(b + 1u)) * 0.5);
    if (num > up || (num == up && (b & 1u) == 1u)) {
      b += 1u;
    }
  }
  if (b > 0u) {
    let down = den * ((f16_value(b - 1u) + f16_value(b)) * 0.5);
    if (num < down || (num == down && (b & 1u) == 1u)) {
      b -= 1u;
    }
  }
  return b;
}

// k = round(t / step) for t, step > 0 (halves away from zero), checked exactly: (k +- 0.5) * step is
// exact in f32 while k has at most 8 bits and step at most 17 significant bits (an f16 times a 6-bit
// code), so the approximate quotient is corrected to the exact rounding. Limited to [0, kmax].
fn round_quotient(t: f32, step: f32, kmax: f32) -> f32 {
  var k = clamp(floor(t / step + 0.5), 0.0, kmax);
  if ((k + 0.5) * step <= t) {
    k += 1.0;
  }
  if (k > 0.0 && (k - 0.5) * step > t) {
    k -= 1.0;
  }
  return min(k, kmax);
}
