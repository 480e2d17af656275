// Accessors of a packed weight buffer holding bf16 (two per u32, element 2i in the low half), bound as
// `WNAME: array<vec4<u32>>`. A bf16 is the top half of an f32, so unpacking is a shift or a mask.
// WNAME is replaced by the binding's name (kernels/shader.ts). e: element index; for WNAME_load8 a
// multiple of 8 (rows are 16-byte aligned, gpu/packed-tensor.ts).

fn WNAME_load1(e: u32) -> f32 {
  let w = e >> 1u;
  let word = WNAME[w >> 2u][w & 3u];
  return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (e & 1u) == 1u));
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let v = WNAME[e >> 3u];
  let lo = vec4<u32>(v.x << 16u, v.x & 0xffff0000u, v.y << 16u, v.y & 0xffff0000u);
  let hi = vec4<u32>(v.z << 16u, v.z & 0xffff0000u, v.w << 16u, v.w & 0xffff0000u);
  return mat2x4<f32>(bitcast<vec4<f32>>(lo), bitcast<vec4<f32>>(hi));
}
