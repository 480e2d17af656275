// Fused decode step 3 (docs/engine.md "Decode step"): for each batch row,
//   a = merge of the decode-attention partials (log-sum-exp rescale over the splits)  (staged)
//   residual += pending MLP partial sums (this workgroup's columns) + a Wo^T (+ bias)
//   [sandwich norms, Gemma] branch = a Wo^T (+ bias) instead, into stream block P.out_block: its norm
//   needs the whole row, so the MLP that stages it adds it to the residual (decode-stream.ts)
// Merge weights per (row, head, split) are computed once per workgroup into `coef`, so staging an
// element costs one multiply-add per split (decode-merge.wgsl).
// The `lora` variant adds each row's LoRA o term (decode-lora-expand.wgsl).
// Consts: the GEMV tile (gemv-config.ts), NORM = false, HAS_BIAS, COEF_CAP (>= BB * NH * S), SANDWICH.

var<workgroup> coef: array<f32, COEF_CAP>; // [b][h][s] = exp(m_s - M) / L

var<private> n0: u32;
var<private> b0: u32;

fn stage_x(b: u32, k: u32) -> f32 {
  let h = k / P.HS;
  return merged(((b0 + b) * P.NH + h) * P.S, (b * P.NH + h) * P.S, k % P.HS);
}

fn norm_w(k: u32) -> f32 {
  return 1.0;
}

fn row_valid(j: u32) -> bool {
  return n0 + j < P.C;
}

fn row_start(j: u32) -> u32 {
  return (n0 + j) * P.w_stride;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  n0 = wid.x * G;
  b0 = wid.y * BB;
  let nb = min(BB, P.B - b0);
  for (var i = lid; i < nb * P.NH; i += WG) {
    let b = i / P.NH;
    let h = i % P.NH;
    merge_weights(((b0 + b) * P.NH + h) * P.S, (b * P.NH + h) * P.S);
  }
  workgroupBarrier();
  gemv_group(lid, P.K, nb, 0.0, true);
  for (var i = lid; i < G * BB; i += WG) {
    let j = i / BB;
    let b = i % BB;
    let n = n0 + j;
    if (n < P.C && b < nb) {
      let r = (b0 + b) * P.C + n;
      if (SANDWICH) {
        var o = ys[i];
        if (HAS_BIAS) {
          o += VEC[P.bias_off + n];
        }
#ifdef_lora
        o += lora_delta(b0 + b, n);
#endif_lora
        STREAM[P.out_block * P.bcap * P.C + r] = o;
        continue;
      }
      var v = STREAM[r] + ys[i];
      if (HAS_BIAS) {
        v += VEC[P.bias_off + n];
      }
#ifdef_lora
      v += lora_delta(b0 + b, n);
#endif_lora
      for (var p = 0u; p < P.pending; p++) {
        v += STREAM[(1u + p) * P.bcap * P.C + r];
      }
      STREAM[r] = v;
    }
  }
}
