// The gated MLP activation's shared parts, for swiglu.wgsl and swiglu-backward.wgsl: their entry point
// (one invocation per element of the [T, F] activation, over the fused [gate | up] rows of GU, row
// stride P.in_stride: both specs name GU, P.T, P.F and P.in_stride alike), which hands each element to
// the kernel's `fn gated(e: GatedElem)`. GELU is gelu-tanh.wgsl's, included beside it.

struct GatedElem {
  t: u32,
  f: u32,
  g: f32, // gate
  u: f32, // up
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= P.T * P.F) {
    return;
  }
  let t = i / P.F;
  let f = i % P.F;
  gated(GatedElem(t, f, GU[t * P.in_stride + f], GU[t * P.in_stride + P.F + f]));
}
