// Accessors of packed Q3_K super-blocks (110 bytes per 256 weights: 32 bytes hmask, 64 bytes of
// 2-bit quants, 12 bytes of 16 packed 6-bit scales, f16 d; w = d * (scale - 32) * (q - 4 * !hbit)),
// bound as `WNAME: array<vec4<u32>>` with the byte helpers of packed-blocks.wgsl. Weight i: half
// n = i / 128, shift s = (i % 128) / 32, j = i % 32: low bits at quant byte 32n + j >> 2s, high bit
// at hmask byte j bit 4n + s, scale 8n + 2s + j / 16. Blocks are 110 bytes, so fields straddle words.
// e: element index; for WNAME_load8 a multiple of 8, so the 8 weights share a scale
// (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q3_K (ggml's kmask1 / kmask2 unpacking).

fn WNAME_q3k_at(e: u32) -> vec4<u32> {
  // (super-block byte offset, j, 4n + s, scale index)
  let b = (e / 256u) * 110u;
  let i = e % 256u;
  let n = i / 128u;
  let s = (i % 128u) / 32u;
  return vec4<u32>(b, i % 32u, 4u * n + s, 8u * n + 2u * s + (i % 32u) / 16u);
}

// d * (scale - 32) of scale index k: 4 low bits from byte k (k < 8) or the high nibble of byte k - 8,
// 2 high bits from byte 8 + k % 4 at bit 2 * (k / 4).
fn WNAME_q3k_scale(b: u32, k: u32) -> f32 {
  let s = b + 96u;
  let lo = select(WNAME_byte(s + k - 8u) >> 4u, WNAME_byte(s + k) & 0xfu, k < 8u);
  let hi = (WNAME_byte(s + 8u + k % 4u) >> (2u * (k / 4u))) & 3u;
  return WNAME_f16(b + 108u) * (f32(lo | (hi << 4u)) - 32.0);
}

fn WNAME_load1(e: u32) -> f32 {
  let at = WNAME_q3k_at(e);
  let n = at.z / 4u;
  let q = (WNAME_byte(at.x + 32u + 32u * n + at.y) >> (2u * (at.z % 4u))) & 3u;
  let h = (WNAME_byte(at.x + at.y) >> at.z) & 1u;
  return WNAME_q3k_scale(at.x, at.w) * (f32(q + 4u * h) - 4.0);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let at = WNAME_q3k_at(e);
  let o = at.x + 32u + 32u * (at.z / 4u) + at.y;
  let shift = 2u * (at.z % 4u);
  let dl = WNAME_q3k_scale(at.x, at.w);
  let h0 = WNAME_fields(WNAME_u32at(at.x + at.y), at.z, 1u);
  let h1 = WNAME_fields(WNAME_u32at(at.x + at.y + 4u), at.z, 1u);
  return mat2x4<f32>(
    (WNAME_fields(WNAME_u32at(o), shift, 3u) + 4.0 * h0 - 4.0) * dl,
    (WNAME_fields(WNAME_u32at(o + 4u), shift, 3u) + 4.0 * h1 - 4.0) * dl,
  );
}
