// Byte access shared by the accessors of GGML block types (packed-q*.wgsl), over a packed weight
// buffer bound as `WNAME: array<vec4<u32>>` holding the file's blocks back to back
// (gpu/packed-tensor.ts). Every block size is even and every field offset inside a block is even, so a
// field starts on a 2-byte boundary but may straddle two u32 words (Q8_0's 34-byte blocks).
// WNAME is replaced by the binding's name (kernels/shader.ts). Layouts: ggml/src/ggml-common.h.
//
// Speed: load8 decodes its block's scale (and a K-quant's packed 6-bit scale and min) on every call,
// so each 8 weights pay for the scale again, and fields that straddle words cost two loads. Faster
// paths, for when a GPU bench shows dequantization bound: a kernel that walks whole blocks (32 or 256
// weights per lane, scales decoded once), K-quant scales unpacked at upload into a side buffer, and
// llama.cpp's integer dot products (activations quantized to 8 bits per block, dot4I8Packed).

fn WNAME_word(w: u32) -> u32 {
  return WNAME[w >> 2u][w & 3u];
}

// The 4 bytes at byte offset b (b even), little-endian: one word, or the halves of two.
fn WNAME_u32at(b: u32) -> u32 {
  let w = b >> 2u;
  let lo = WNAME_word(w);
  if ((b & 3u) == 0u) {
    return lo;
  }
  return (lo >> 16u) | (WNAME_word(w + 1u) << 16u);
}

fn WNAME_byte(b: u32) -> u32 {
  return (WNAME_word(b >> 2u) >> ((b & 3u) * 8u)) & 0xffu;
}

fn WNAME_sbyte(b: u32) -> f32 {
  return f32(bitcast<i32>(WNAME_byte(b) << 24u) >> 24u);
}

// The f16 at byte offset b (b even), as f32: the core builtin, no shader-f16 needed.
fn WNAME_f16(b: u32) -> f32 {
  return unpack2x16float(WNAME_word(b >> 2u) >> ((b & 2u) * 8u)).x;
}

// Bits [shift, shift + width) of each of the 4 bytes of w (mask = 2^width - 1, shift + width <= 8).
fn WNAME_fields(w: u32, shift: u32, mask: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(w) >> (vec4<u32>(0u, 8u, 16u, 24u) + shift)) & vec4<u32>(mask));
}

// The 4 bytes of w as signed 8-bit integers.
fn WNAME_sbytes(w: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(w)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// The nibbles of weights i..i+7 (i a multiple of 8) of a 32-weight block whose 16 nibble bytes start
// at byte q: low nibbles are weights 0..15, high nibbles 16..31 (Q4_0, Q4_1, Q5_0, Q5_1).
fn WNAME_nibbles8(q: u32, i: u32) -> mat2x4<f32> {
  let o = q + i % 16u;
  let shift = (i / 16u) * 4u;
  return mat2x4<f32>(WNAME_fields(WNAME_u32at(o), shift, 0xfu), WNAME_fields(WNAME_u32at(o + 4u), shift, 0xfu));
}

// 16 times the 5th bits of weights i..i+7 of a Q5_0 / Q5_1 block: bits i.. of its u32 qh.
fn WNAME_q5high8(qh: u32, i: u32) -> mat2x4<f32> {
  let h = vec4<u32>(qh >> i);
  return mat2x4<f32>(
    vec4<f32>((h >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u)) * 16.0,
    vec4<f32>((h >> vec4<u32>(4u, 5u, 6u, 7u)) & vec4<u32>(1u)) * 16.0,
  );
}

// Q4_K / Q5_K: scale and min of sub-block j (0..7), 6 bits each packed in the 12 bytes at s
// (ggml's get_scale_min_k4), as (d * scale, dmin * min) with the super-block's d at b and dmin at b + 2.
fn WNAME_scale_min_k4(b: u32, s: u32, j: u32) -> vec2<f32> {
  var sc: u32;
  var m: u32;
  if (j < 4u) {
    sc = WNAME_byte(s + j) & 63u;
    m = WNAME_byte(s + j + 4u) & 63u;
  } else {
    let hi = WNAME_byte(s + j + 4u);
    sc = (hi & 0xfu) | ((WNAME_byte(s + j - 4u) >> 6u) << 4u);
    m = (hi >> 4u) | ((WNAME_byte(s + j) >> 6u) << 4u);
  }
  return vec2<f32>(WNAME_f16(b) * f32(sc), WNAME_f16(b + 2u) * f32(m));
}
