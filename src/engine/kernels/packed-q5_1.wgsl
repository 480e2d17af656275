// Accessors of packed Q5_1 blocks (24 bytes per 32 weights: f16 d, f16 m, u32 qh whose bit i is
// weight i's 5th bit, 16 bytes of nibbles as in Q4_1; w = q * d + m), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. e: element index; for
// WNAME_load8 a multiple of 8, so the 8 weights lie in one block (gpu/packed-tensor.ts).
// Reference: model/quant/dequant.ts q5_1.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 24u;
  let i = e % 32u;
  let lo = (WNAME_byte(b + 8u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = ((WNAME_word((b + 4u) >> 2u) >> i) & 1u) << 4u;
  return f32(lo | hi) * WNAME_f16(b) + WNAME_f16(b + 2u);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 24u;
  let q = WNAME_nibbles8(b + 8u, e % 32u) + WNAME_q5high8(WNAME_word((b + 4u) >> 2u), e % 32u);
  let d = WNAME_f16(b);
  let m = WNAME_f16(b + 2u);
  return mat2x4<f32>(q[0] * d + m, q[1] * d + m);
}
