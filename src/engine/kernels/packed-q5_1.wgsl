// Accessors of packed Q5_1 blocks (24 bytes per 32 weights: f16 d, f16 m, u32 qh whose bit i is
// weight i's 5th bit, 16 bytes of nibbles as in Q4_1; w = q * d + m), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. e: element index; for
// WNAME_load8 a multiple of 8, so the 8 weights lie in one block (gpu/packed-tensor.ts).
// Reference: reference/dequant.ts q5_1.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 24u;
  let i = e % 32u;
  let lo = (WNAME_byte(b + 8u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  let hi = ((WNAME_word((b + 4u) >> 2u) >> i) & 1u) << 4u;
  return f32(lo | hi) * WNAME_f16(b) + WNAME_f16(b + 2u);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 24u;
  let i = e % 32u;
  let o = b + 8u + i % 16u;
  let shift = (i / 16u) * 4u;
  let qh = WNAME_word((b + 4u) >> 2u) >> i;
  let d = WNAME_f16(b);
  let m = WNAME_f16(b + 2u);
  let h0 = vec4<f32>((vec4<u32>(qh) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u)) * 16.0;
  let h1 = vec4<f32>((vec4<u32>(qh) >> vec4<u32>(4u, 5u, 6u, 7u)) & vec4<u32>(1u)) * 16.0;
  return mat2x4<f32>(
    (WNAME_fields(WNAME_u32at(o), shift, 0xfu) + h0) * d + m,
    (WNAME_fields(WNAME_u32at(o + 4u), shift, 0xfu) + h1) * d + m,
  );
}
