// Accessors of packed Q2_K super-blocks (84 bytes per 256 weights: 16 bytes of 4-bit scale / min
// pairs, 64 bytes of 2-bit quants, f16 d, f16 dmin; w = d * scale * q - dmin * min), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. Weight i: half n = i / 128
// uses quant bytes [32n, 32n + 32) at bit shift 2 * ((i % 128) / 32); its 16-weight group
// n * 8 + (i % 128) / 16 picks the scale byte. e: element index; for WNAME_load8 a multiple of 8, so
// the 8 weights share a group (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q2_K.

fn WNAME_q2k_at(e: u32) -> vec4<u32> {
  // (super-block byte offset, quant byte offset, bit shift, scale byte offset)
  let b = (e / 256u) * 84u;
  let i = e % 256u;
  let n = i / 128u;
  let r = i % 128u;
  return vec4<u32>(b, b + 16u + n * 32u + r % 32u, 2u * (r / 32u), b + n * 8u + r / 16u);
}

fn WNAME_load1(e: u32) -> f32 {
  let at = WNAME_q2k_at(e);
  let sc = WNAME_byte(at.w);
  let q = (WNAME_byte(at.y) >> at.z) & 3u;
  return WNAME_f16(at.x + 80u) * f32(sc & 0xfu) * f32(q) - WNAME_f16(at.x + 82u) * f32(sc >> 4u);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let at = WNAME_q2k_at(e);
  let sc = WNAME_byte(at.w);
  let dl = WNAME_f16(at.x + 80u) * f32(sc & 0xfu);
  let ml = WNAME_f16(at.x + 82u) * f32(sc >> 4u);
  return mat2x4<f32>(
    WNAME_fields(WNAME_u32at(at.y), at.z, 3u) * dl - ml,
    WNAME_fields(WNAME_u32at(at.y + 4u), at.z, 3u) * dl - ml,
  );
}
