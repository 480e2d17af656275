// Accessors of a packed weight buffer holding f16 (two per u32, element 2i in the low half), bound as
// `WNAME: array<vec4<u32>>`. Unpacked with the core builtin unpack2x16float: no shader-f16 needed.
// WNAME is replaced by the binding's name (kernels/shader.ts). e: element index; for WNAME_load8 a
// multiple of 8 (rows are 16-byte aligned, gpu/packed-tensor.ts).

fn WNAME_load1(e: u32) -> f32 {
  let w = e >> 1u;
  return unpack2x16float(WNAME[w >> 2u][w & 3u])[e & 1u];
}

fn WNAME_load8(e: u32) -> mat2x4<f32> {
  let v = WNAME[e >> 3u];
  return mat2x4<f32>(
    vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)),
    vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w)),
  );
}
