// Accessors of packed Q4_0 blocks (18 bytes per 32 weights: f16 d, 16 bytes of nibbles, low nibbles
// are weights 0..15 and high nibbles 16..31; w = (q - 8) * d), bound as `WNAME: array<vec4<u32>>`
// with the byte helpers of packed-blocks.wgsl. e: element index; for WNAME_load8 a multiple of 8, so
// the 8 weights lie in one block (gpu/packed-tensor.ts). Reference: model/quant/dequant.ts q4_0.

fn WNAME_load1(e: u32) -> f32 {
  let b = (e / 32u) * 18u;
  let i = e % 32u;
  let q = (WNAME_byte(b + 2u + i % 16u) >> ((i / 16u) * 4u)) & 0xfu;
  return (f32(q) - 8.0) * WNAME_f16(b);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let b = (e / 32u) * 18u;
  let q = WNAME_nibbles8(b + 2u, e % 32u);
  let d = WNAME_f16(b);
  return mat2x4<f32>((q[0] - 8.0) * d, (q[1] - 8.0) * d);
}
