// The fused MLP's output as its consumers read it (decode-qkv.wgsl and decode-finalize-sandwich.wgsl
// with sandwich norms): the sum of the P.pending split-K partials at offset r of block 0's layout, in
// the fixed order every consumer uses (decode-stream.ts).
// Four loads are issued before they are added, in the same order as one at a time.
fn pending_sum(r: u32) -> f32 {
  let block = P.bcap * P.C;
  var v = 0.0;
  var p = 0u;
  for (; p + 4u <= P.pending; p += 4u) {
    let at = (1u + p) * block + r;
    let a = STREAM[at];
    let b = STREAM[at + block];
    let c = STREAM[at + 2u * block];
    let d = STREAM[at + 3u * block];
    v = v + a + b + c + d;
  }
  for (; p < P.pending; p++) {
    v += STREAM[(1u + p) * block + r];
  }
  return v;
}
