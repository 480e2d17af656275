// Quantize on load, Q8_0: rows of f32 / f16 / bf16 values (X, read through its packed accessors) ->
// Q8_0 blocks in a PackedMatrix chunk (OUT). One invocation per pair of blocks: a row holds an even
// number of 34-byte blocks (gpu/packed-tensor.ts pads an odd count with a zero block), so a pair is 17
// whole words and no two invocations share a word. Per block: d = max|x| / 127 as f16 (rounded
// exactly, quantize-common.wgsl), q = round(x / d) against that stored d, |q| <= 127: the same bytes
// as model/quant/quantize.ts quantizeQ8_0.

// One block's 34 bytes into words[] at byte offset o (o even: 0 or 34).
fn put_byte(words: ptr<function, array<u32, 17>>, o: u32, v: u32) {
  (*words)[o >> 2u] |= (v & 0xffu) << ((o & 3u) * 8u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let pairs = (P.cols + 63u) / 64u;
  let i = gid.x + gid.y * nwg.x * 64u;
  if (i >= P.rows * pairs) {
    return;
  }
  let r = i / pairs;
  let p = i % pairs;
  var words: array<u32, 17>;
  for (var h = 0u; h < 2u; h++) {
    let c0 = p * 64u + h * 32u;
    if (c0 >= P.cols) {
      break; // the padding block: zeros
    }
    var x: array<f32, 32>;
    var amax = 0.0;
    for (var k = 0u; k < 32u; k += 8u) {
      let v = X_load8(r * P.cols + c0 + k);
      for (var j = 0u; j < 4u; j++) {
        x[k + j] = v[0][j];
        x[k + 4u + j] = v[1][j];
        amax = max(amax, max(abs(v[0][j]), abs(v[1][j])));
      }
    }
    let db = f16_of_quotient(amax, 127.0);
    let o = h * 34u;
    put_byte(&words, o, db);
    put_byte(&words, o + 1u, db >> 8u);
    if (db == 0u || db >= 0x7c00u) {
      continue; // d is 0 (or inf): every q is 0
    }
    let d = f16_value(db);
    for (var j = 0u; j < 32u; j++) {
      let k = i32(round_quotient(abs(x[j]), d, 127.0));
      put_byte(&words, o + 2u + j, u32(select(k, -k, x[j] < 0.0)));
    }
  }
  let at = P.out_off + r * P.out_stride + p * 17u;
  for (var w = 0u; w < 17u; w++) {
    OUT[at + w] = words[w];
  }
}
