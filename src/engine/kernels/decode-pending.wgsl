// The fused MLP's output as its consumers read it (decode-qkv.wgsl and decode-finalize-sandwich.wgsl
// with sandwich norms): the sum of the P.pending split-K partials at offset r of block 0's layout, in
// the fixed order every consumer uses (decode-stream.ts).
fn pending_sum(r: u32) -> f32 {
  var v = 0.0;
  for (var p = 0u; p < P.pending; p++) {
    v += STREAM[(1u + p) * P.bcap * P.C + r];
  }
  return v;
}
