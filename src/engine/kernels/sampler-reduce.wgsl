// Workgroup tree reductions the sampler's passes share. Each thread t has put its partial at index
// t of the arrays; the result lands at index 0. Every invocation of the workgroup calls them (they
// hold barriers), with n a power of two. The arrays also fit the finish pass's FINISH_WG threads,
// which can be more than WG (32 on software adapters).
// Prepended after sampler-common.wgsl. Not here: logprobs' reduction (it also counts ranks).

const FINISH_WG: u32 = 64u;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, max(WG, FINISH_WG)>;
var<workgroup> red_p: array<f32, WG>;
var<workgroup> red_i: array<u32, max(WG, FINISH_WG)>;

// The largest score red_s with its id red_i, over the first n threads; a tie keeps the lower id.
fn reduce_argmax(t: u32, n: u32) {
  workgroupBarrier();
  for (var off = n / 2u; off > 0u; off = off >> 1u) {
    if (t < off) {
      let s2 = red_s[t + off];
      let i2 = red_i[t + off];
      if (s2 > red_s[t] || (s2 == red_s[t] && i2 < red_i[t])) {
        red_s[t] = s2;
        red_i[t] = i2;
      }
    }
    workgroupBarrier();
  }
}

// Online-softmax statistics over WG threads: max red_m with sum of exp(x - max) red_s, merged at
// the larger max, and the max of red_p.
fn reduce_softmax_stats(t: u32) {
  workgroupBarrier();
  for (var off = WG / 2u; off > 0u; off = off >> 1u) {
    if (t < off) {
      let m2 = red_m[t + off];
      let m = max(red_m[t], m2);
      red_s[t] = red_s[t] * exp(red_m[t] - m) + red_s[t + off] * exp(m2 - m);
      red_m[t] = m;
      red_p[t] = max(red_p[t], red_p[t + off]);
    }
    workgroupBarrier();
  }
}
