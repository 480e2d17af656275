// Accessors of packed Q4_K super-blocks (144 bytes per 256 weights: f16 d, f16 dmin, 12 bytes of
// 6-bit scales and mins, 128 bytes of nibbles; 8 sub-blocks of 32, sub-block j's weight l is nibble
// j % 2 of byte 32 * (j / 2) + l; w = d * scale_j * q - dmin * min_j), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl (WNAME_scale_min_k4).
// e: element index; for WNAME_load8 a multiple of 8, so the 8 weights share a sub-block
// (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q4_K.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 256u) * 144u;
  let j = (e % 256u) / 32u;
  let q = (WNAME_byte(b + 16u + 32u * (j / 2u) + e % 32u) >> (4u * (j % 2u))) & 0xfu;
  let dm = WNAME_scale_min_k4(b, b + 4u, j);
  return dm.x * f32(q) - dm.y;
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 256u) * 144u;
  let j = (e % 256u) / 32u;
  let o = b + 16u + 32u * (j / 2u) + e % 32u;
  let shift = 4u * (j % 2u);
  let dm = WNAME_scale_min_k4(b, b + 4u, j);
  return mat2x4<f32>(
    WNAME_fields(WNAME_u32at(o), shift, 0xfu) * dm.x - dm.y,
    WNAME_fields(WNAME_u32at(o + 4u), shift, 0xfu) * dm.x - dm.y,
  );
}
