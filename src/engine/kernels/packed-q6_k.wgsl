// Accessors of packed Q6_K super-blocks (210 bytes per 256 weights: 128 bytes of low nibbles, 64 bytes
// of high 2-bit pairs, 16 x i8 scales, f16 d; w = d * scale * (q - 32)), bound as
// `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. Weight i: half n = i / 128,
// quarter t = (i % 128) / 32, l = i % 32: low nibble t / 2 of byte 64n + 32 (t % 2) + l, high bits
// 2t.. of byte 128 + 32n + l, scale 8n + 2t + l / 16. Blocks are 210 bytes, so fields straddle words.
// e: element index; for WNAME_load8 a multiple of 8, so the 8 weights share a scale
// (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q6_K.

fn WNAME_q6k_at(e: u32) -> vec4<u32> {
  // (super-block byte offset, low-nibble byte offset, t, high-bits byte offset)
  let b = (e / 256u) * 210u;
  let i = e % 256u;
  let n = i / 128u;
  let t = (i % 128u) / 32u;
  let l = i % 32u;
  return vec4<u32>(b, b + 64u * n + 32u * (t % 2u) + l, t, b + 128u + 32u * n + l);
}

fn WNAME_q6k_scale(b: u32, e: u32, t: u32) -> f32 {
  let i = e % 256u;
  return WNAME_f16(b + 208u) * WNAME_sbyte(b + 192u + 8u * (i / 128u) + 2u * t + (i % 32u) / 16u);
}

fn WNAME_load1(e: u32) -> f32 {
  let at = WNAME_q6k_at(e);
  let lo = (WNAME_byte(at.y) >> (4u * (at.z / 2u))) & 0xfu;
  let hi = (WNAME_byte(at.w) >> (2u * at.z)) & 3u;
  return WNAME_q6k_scale(at.x, e, at.z) * (f32(lo | (hi << 4u)) - 32.0);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let at = WNAME_q6k_at(e);
  let shift = 4u * (at.z / 2u);
  let d = WNAME_q6k_scale(at.x, e, at.z);
  let q0 = WNAME_fields(WNAME_u32at(at.y), shift, 0xfu) + 16.0 * WNAME_fields(WNAME_u32at(at.w), 2u * at.z, 3u);
  let q1 = WNAME_fields(WNAME_u32at(at.y + 4u), shift, 0xfu) + 16.0 * WNAME_fields(WNAME_u32at(at.w + 4u), 2u * at.z, 3u);
  return mat2x4<f32>((q0 - 32.0) * d, (q1 - 32.0) * d);
}
