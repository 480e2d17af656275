// Accessors of a packed weight buffer holding f32 (bit patterns in u32), bound as
// `WNAME: array<vec4<u32>>`. WNAME is replaced by the binding's name (kernels/shader.ts).
// e: element index; for WNAME_load8, a multiple of 8 (rows are 16-byte aligned, gpu/packed-tensor.ts).

fn WNAME_load1(e: u32) -> f32 {
  return bitcast<f32>(WNAME[e >> 2u][e & 3u]);
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let i = e >> 2u;
  return mat2x4<f32>(bitcast<vec4<f32>>(WNAME[i]), bitcast<vec4<f32>>(WNAME[i + 1u]));
}
