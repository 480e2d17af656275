// Accessors of packed Q5_0 blocks (22 bytes per 32 weights: f16 d, u32 qh whose bit i is weight i's
// 5th bit, 16 bytes of nibbles as in Q4_0; w = (q - 16) * d), bound as `WNAME: array<vec4<u32>>`
// with the byte helpers of packed-blocks.wgsl. e: element index; for WNAME_load8 a multiple of 8, so
// the 8 weights lie in one block (gpu/packed-tensor.ts). Reference: reference/dequant.ts q5_0.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 22u;
  let i = e % 32u;
  let lo = (WNAME_byte(b + 6u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = ((WNAME_u32at(b + 2u) >> i) & 1u) << 4u;
  return (f32(lo | hi) - 16.0) * WNAME_f16(b);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 22u;
  let i = e % 32u;
  let o = b + 6u + i % 16u;
  let shift = (i / 16u) * 4u;
  let qh = WNAME_u32at(b + 2u) >> i;
  let d = WNAME_f16(b);
  let h0 = vec4<f32>((vec4<u32>(qh) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u)) * 16.0;
  let h1 = vec4<f32>((vec4<u32>(qh) >> vec4<u32>(4u, 5u, 6u, 7u)) & vec4<u32>(1u)) * 16.0;
  return mat2x4<f32>(
    (WNAME_fields(WNAME_u32at(o), shift, 0xfu) + h0 - 16.0) * d,
    (WNAME_fields(WNAME_u32at(o + 4u), shift, 0xfu) + h1 - 16.0) * d,
  );
}
