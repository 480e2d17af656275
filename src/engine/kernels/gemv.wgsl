// Decode linear layer (skinny GEMM, B <= 64 activation rows): Y[b, n] (+)= sum_k W[n, k] X[b, k]
// (+ bias[n]), on gemv-core.wgsl. Options baked as consts:
//   NORM     X is normalised on the fly: x = rmsnorm(X[b]) * w (weight at VEC[norm_off]);
//   HAS_BIAS adds VEC[bias_off + n];
//   ACCUM    adds into Y (residual connections) instead of overwriting;
//   SWIGLU   W is a fused [gate; up] matrix: output n = silu(gate_n . x) * (up_n . x), the up row of
//            output n being up_row + n; a workgroup owns G / 2 outputs (gate and up rows side by side).

const OUTS: u32 = select(G, G / 2u, SWIGLU); // outputs per workgroup

var<private> n0: u32; // first output of this workgroup
var<private> b0: u32; // first activation row of this workgroup

fn stage_x(b: u32, k: u32) -> f32 {
  return X[P.x_off + (b0 + b) * P.x_stride + k];
}

fn norm_w(k: u32) -> f32 {
  return VEC[P.norm_off + k];
}

fn out_of(j: u32) -> u32 {
  return n0 + j % OUTS;
}

fn row_valid(j: u32) -> bool {
  return out_of(j) < P.N;
}

fn row_start(j: u32) -> u32 {
  var row = out_of(j);
  if (SWIGLU && j >= OUTS) {
    row += P.up_row;
  }
  return P.w_off + row * P.w_stride;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  n0 = wid.x * OUTS;
  b0 = wid.y * BB;
  let nb = min(BB, P.B - b0);
  gemv_group(lid, P.K, nb, P.eps, true);
  for (var i = lid; i < OUTS * BB; i += WG) {
    let j = i / BB;
    let b = i % BB;
    let n = n0 + j;
    if (n < P.N && b < nb) {
      var v = ys[j * BB + b];
      if (NORM) {
        v *= rstd[b];
      }
      if (SWIGLU) {
        var g = v;
        var u = ys[(j + OUTS) * BB + b];
        if (NORM) {
          u *= rstd[b];
        }
        if (HAS_BIAS) {
          g += VEC[P.bias_off + n];
          u += VEC[P.bias_off + P.up_row + n];
        }
        v = g / (1.0 + exp(-g)) * u;
      } else if (HAS_BIAS) {
        v += VEC[P.bias_off + n];
      }
      let yi = P.y_off + (b0 + b) * P.y_stride + n;
      if (ACCUM) {
        Y[yi] += v;
      } else {
        Y[yi] = v;
      }
    }
  }
}
