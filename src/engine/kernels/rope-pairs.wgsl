// RoPE pairs of a head, shared by qkv-prep.wgsl and decode-qkv.wgsl (both declare HS and ROT, the
// rotated dims: all of HS, or Phi-3's partial_rotary_factor * HS). HF's rotate_half pairs dims
// (i, i + ROT/2) for i < ROT/2; the pass-through dims ROT.. are paired the same way after them, so a
// loop over HS/2 pairs covers the head and only pairs i < ROT/2 rotate (with table entry i).

fn pair_dims(i: u32) -> vec2<u32> {
  if (i < ROT / 2u) {
    return vec2<u32>(i, i + ROT / 2u);
  }
  let m = ROT + (i - ROT / 2u);
  return vec2<u32>(m, m + (HS - ROT) / 2u);
}
