// Fused decode step 4 (docs/engine.md "Decode step"): workgroup s owns the slice f0 = s * FS ..
// f0 + FS of the intermediate dimension, for BB batch rows:
//   x = rmsnorm(residual) * post_attention_layernorm                (folded into the GEMV load)
//   [sandwich norms, Gemma] residual = block 0 + rmsnorm(branch) * post_attention_layernorm, the
//   branch's rstd from a pass over the row first (decode-branch-norm.wgsl), each workgroup writing its
//   share of that residual to the `mid` block; x = rmsnorm(residual) * pre_feedforward_layernorm
//   g, u = gate and up rows of the slice (x Wg^T, x Wu^T, + bias);  h = silu(g) * u, or GeGLU
//   gelu_tanh(g) * u                                                (in workgroup memory)
//   partial_s = Wd[:, slice] h  (+ down bias in slice 0)            written to stream block 1 + s
// The next layer's qkv (or the final step) adds the partials into the residual: split-K over F with a
// fixed summation order, deterministic, no float atomics.
// Phase 1 walks the 2 FS gate/up rows G at a time on the GEMV core (activations staged once). Phase 2
// gives each invocation whole output rows: FS contiguous weights of a down_proj row against h.
// The `lora` variant adds each row's LoRA gate|up term before the activation and writes the slice's
// share of the down shrink (decode-lora.wgsl folds it into the residual).
// Consts: the GEMV tile (gemv-config.ts), NORM = true, FS (multiple of 8), HAS_BIAS, GELU, SANDWICH.

var<workgroup> gu: array<f32, 2u * FS * BB>;       // gate then up projections of the slice, [q][b]
var<workgroup> hs: array<vec4<f32>, BB * FS / 4u>; // h [b][f]

// Eight down weights against h at hs[hi], hs[hi + 1].
fn dot_h(w: mat2x4<f32>, hi: u32) -> f32 {
  return dot(w[0], hs[hi]) + dot(w[1], hs[hi + 1u]);
}

// Group g of a down row's slice, or zeros past its end.
fn down8(row: u32, g: u32, groups: u32) -> mat2x4<f32> {
  if (g < groups) {
    return WD_load8(row + 8u * g);
  }
  return mat2x4<f32>();
}

var<private> f0: u32;
var<private> fs_eff: u32; // FS, or less in the last slice
var<private> b0: u32;
var<private> group_base: u32;

// o_proj's output (sandwich norms).
fn branch_x(b: u32, k: u32) -> f32 {
  return STREAM[(P.branch_block * P.bcap + b0 + b) * P.C + k];
}

fn stage_x(b: u32, k: u32) -> f32 {
  let h = STREAM[(b0 + b) * P.C + k];
  if (SANDWICH) {
    return h + branch_x(b, k) * branch_rstd[b] * VEC[P.attn_norm_off + k];
  }
  return h;
}

fn norm_w(k: u32) -> f32 {
  return VEC[P.norm_off + k];
}

fn row_valid(j: u32) -> bool {
  let q = group_base + j;
  return (q < FS && q < fs_eff) || (q >= FS && q < FS + fs_eff);
}

fn row_start(j: u32) -> u32 {
  let q = group_base + j;
  if (q < FS) {
    return (f0 + q) * P.w_stride;
  }
  return (P.F + f0 + q - FS) * P.w_stride;
}

@compute @workgroup_size(WG)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32> /*@subgroup-params*/
) {
  /*@subgroup-init*/
  let s = wid.x;
  f0 = s * FS;
  fs_eff = min(FS, P.F - f0);
  b0 = wid.y * BB;
  let nb = min(BB, P.B - b0);
  if (SANDWICH) {
    branch_norm(lid, P.C, nb, P.eps);
    write_share(lid, s, nwg.x, nb, P.mid_block);
  }
  for (var grp = 0u; grp < 2u * FS; grp += G) {
    group_base = grp;
    gemv_group(lid, P.C, nb, P.eps, grp == 0u);
    for (var i = lid; i < G * BB; i += WG) {
      let q = grp + i / BB;
      if (q < 2u * FS) {
        var v = ys[i] * rstd[i % BB];
#ifdef_lora
        let f = select(q - FS, q, q < FS);
        if (f < fs_eff && i % BB < nb) {
          v += lora_delta(b0 + i % BB, select(P.F + f0 + f, f0 + f, q < FS));
        }
#endif_lora
        gu[q * BB + i % BB] = v;
      }
    }
    workgroupBarrier();
  }
  for (var i = lid; i < FS * BB; i += WG) {
    let f = i / BB;
    let b = i % BB;
    var h = 0.0;
    if (f < fs_eff && b < nb) {
      var g = gu[f * BB + b];
      var u = gu[(FS + f) * BB + b];
      if (HAS_BIAS) {
        g += VEC[P.gu_bias_off + f0 + f];
        u += VEC[P.gu_bias_off + P.F + f0 + f];
      }
      if (GELU) {
        h = gelu_tanh(g) * u;
      } else {
        h = g / (1.0 + exp(-g)) * u;
      }
    }
    hs[(b * FS + f) / 4u][f % 4u] = h;
  }
  workgroupBarrier();
#ifdef_lora
  // This slice's share of each row's LoRA down shrink, sum_f A_down[j, f0 + f] h[f], for the next
  // DecodeLora fold to sum over the slices and expand.
  for (var i = lid; i < nb * RMAX; i += WG) {
    let row = (b0 + i / RMAX) * LROW;
    let r = LU[row + 1u];
    let j = i % RMAX;
    if (j < r) {
      let a = LU[row] + r * (P.lora_layer * P.lora_units + P.lora_down_a) + j * P.F + f0;
      let b = i / RMAX;
      var acc = 0.0;
      // Four loads before their use, added in order (the last slice may end mid-vec4).
      var f = 0u;
      for (; f + 4u <= fs_eff; f += 4u) {
        let w = vec4<f32>(POOL[a + f], POOL[a + f + 1u], POOL[a + f + 2u], POOL[a + f + 3u]);
        let h = hs[(b * FS + f) / 4u];
        acc += w.x * h.x;
        acc += w.y * h.y;
        acc += w.z * h.z;
        acc += w.w * h.w;
      }
      for (; f < fs_eff; f++) {
        acc += POOL[a + f] * hs[(b * FS + f) / 4u][f % 4u];
      }
      LU[row + LORA_UD + s * RMAX + j] = bitcast<u32>(acc);
    }
  }
#endif_lora
  // Phase 2: with LOADS = 4, four eight-element loads of the row issued before any is used, added in
  // the same order as one at a time (gemv-core.wgsl).
  let groups = (fs_eff + 7u) / 8u;
  for (var c = lid; c < P.C; c += WG) {
    var acc = array<f32, BB>(); // explicit zero: SwiftShader does not re-zero loop-body arrays
    let row = c * P.d_stride + f0;
    if (LOADS == 1u) {
      for (var g = 0u; g < groups; g++) {
        let w = WD_load8(row + 8u * g);
        for (var b = 0u; b < BB; b++) {
          acc[b] += dot_h(w, b * (FS / 4u) + 2u * g);
        }
      }
    } else {
      for (var g0 = 0u; g0 < groups; g0 += 4u) {
        let w0 = down8(row, g0, groups);
        let w1 = down8(row, g0 + 1u, groups);
        let w2 = down8(row, g0 + 2u, groups);
        let w3 = down8(row, g0 + 3u, groups);
        for (var b = 0u; b < BB; b++) {
          let hi = b * (FS / 4u) + 2u * g0;
          acc[b] += dot_h(w0, hi);
          if (g0 + 1u < groups) {
            acc[b] += dot_h(w1, hi + 2u);
          }
          if (g0 + 2u < groups) {
            acc[b] += dot_h(w2, hi + 4u);
          }
          if (g0 + 3u < groups) {
            acc[b] += dot_h(w3, hi + 6u);
          }
        }
      }
    }
    for (var b = 0u; b < nb; b++) {
      var v = acc[b];
      if (HAS_BIAS && s == 0u) {
        v += VEC[P.d_bias_off + c];
      }
      STREAM[(1u + s) * P.bcap * P.C + (b0 + b) * P.C + c] = v;
    }
  }
}
