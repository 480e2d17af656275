// Accessors of packed Q5_0 blocks (22 bytes per 32 weights: f16 d, u32 qh whose bit i is weight i's
// 5th bit, 16 bytes of nibbles as in Q4_0; w = (q - 16) * d), bound as `WNAME: array<vec4<u32>>`
// with the byte helpers of packed-blocks.wgsl. e: element index; for WNAME_load8 a multiple of 8, so
// the 8 weights lie in one block (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q5_0.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 22u;
  let i = e % 32u;
  let lo = (WNAME_byte(b + 6u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = ((WNAME_u32at(b + 2u) >> i) & 1u) << 4u;
  return (f32(lo | hi) - 16.0) * WNAME_f16(b);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 22u;
  let q = WNAME_nibbles8(b + 6u, e % 32u) + WNAME_q5high8(WNAME_u32at(b + 2u), e % 32u);
  let d = WNAME_f16(b);
  return mat2x4<f32>((q[0] - 16.0) * d, (q[1] - 16.0) * d);
}
