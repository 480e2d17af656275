// Accessors of packed Q8_0 blocks (34 bytes per 32 weights: f16 d, 32 x i8 q; w = q * d), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. e: element index; for
// WNAME_load8 a multiple of 8, so the 8 weights lie in one block (gpu/packed-tensor.ts).
// Reference: model/quant/dequant.ts q8_0.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 34u;
  return WNAME_sbyte(b + 2u + e % 32u) * WNAME_f16(b);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 34u;
  let o = b + 2u + e % 32u;
  let d = WNAME_f16(b);
  return mat2x4<f32>(WNAME_sbytes(WNAME_u32at(o)) * d, WNAME_sbytes(WNAME_u32at(o + 4u)) * d);
}
