// The LoRA expand term of a fused decode kernel (its `lora` variant, decode-lora.ts): for batch row
// `row` and output column n of the kernel's module group (q|k|v, o, or gate|up),
//   scale * sum_j B_m[c, j] U_m[j]
// with module m and its column c found from the group's widths, U_m and the row's adapter header
// written by DecodeLora earlier in the step (decode-lora.wgsl has the LU layout). 0 on a row without
// an adapter. Uniforms: lora_layer, lora_units (pool units per layer), lora_m (modules in the group),
// lora_b0..2 (each module's B units), lora_w0, lora_w1 (output columns of modules 0, 1). Consts:
// RMAX, LROW.

fn lora_delta(row: u32, n: u32) -> f32 {
  let o = row * LROW;
  let r = LU[o + 1u];
  if (r == 0u) {
    return 0.0;
  }
  var m = 0u;
  var c = n;
  var units = P.lora_b0;
  if (P.lora_m > 1u && c >= P.lora_w0) {
    m = 1u;
    c -= P.lora_w0;
    units = P.lora_b1;
    if (P.lora_m > 2u && c >= P.lora_w1) {
      m = 2u;
      c -= P.lora_w1;
      units = P.lora_b2;
    }
  }
  let b_row = LU[o] + r * (P.lora_layer * P.lora_units + units) + c * r;
  let u = o + 4u + m * RMAX;
  // Four ranks' loads before their use, added in rank order.
  var acc = 0.0;
  var j = 0u;
  for (; j + 4u <= r; j += 4u) {
    let w = vec4<f32>(POOL[b_row + j], POOL[b_row + j + 1u], POOL[b_row + j + 2u], POOL[b_row + j + 3u]);
    let x = bitcast<vec4<f32>>(vec4<u32>(LU[u + j], LU[u + j + 1u], LU[u + j + 2u], LU[u + j + 3u]));
    acc += w.x * x.x;
    acc += w.y * x.y;
    acc += w.z * x.z;
    acc += w.w * x.w;
  }
  for (; j < r; j++) {
    acc += POOL[b_row + j] * bitcast<f32>(LU[u + j]);
  }
  return bitcast<f32>(LU[o + 2u]) * acc;
}
