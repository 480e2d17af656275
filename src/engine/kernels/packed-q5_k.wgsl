// Accessors of packed Q5_K super-blocks (176 bytes per 256 weights: f16 d, f16 dmin, 12 bytes of
// 6-bit scales and mins, 32 bytes qh, 128 bytes of nibbles laid out as Q4_K's; weight l of sub-block
// j has its 5th bit at bit j of qh byte l; w = d * scale_j * q - dmin * min_j), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl (WNAME_scale_min_k4).
// e: element index; for WNAME_load8 a multiple of 8, so the 8 weights share a sub-block
// (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q5_K.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 256u) * 176u;
  let j = (e % 256u) / 32u;
  let l = e % 32u;
  let lo = (WNAME_byte(b + 48u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 0xfu;
  let hi = (WNAME_byte(b + 16u + l) >> j) & 1u;
  let dm = WNAME_scale_min_k4(b, b + 4u, j);
  return dm.x * f32(lo + 16u * hi) - dm.y;
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 256u) * 176u;
  let j = (e % 256u) / 32u;
  let l = e % 32u;
  let o = b + 48u + 32u * (j / 2u) + l;
  let shift = 4u * (j % 2u);
  let dm = WNAME_scale_min_k4(b, b + 4u, j);
  let h0 = WNAME_fields(WNAME_u32at(b + 16u + l), j, 1u);
  let h1 = WNAME_fields(WNAME_u32at(b + 20u + l), j, 1u);
  return mat2x4<f32>(
    (WNAME_fields(WNAME_u32at(o), shift, 0xfu) + 16.0 * h0) * dm.x - dm.y,
    (WNAME_fields(WNAME_u32at(o + 4u), shift, 0xfu) + 16.0 * h1) * dm.x - dm.y,
  );
}
