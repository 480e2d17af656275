// Fused decode step 1 (docs/engine.md "Decode step"): for each batch row,
//   h = residual + sum of the previous layer's pending MLP partial sums   (staged once per workgroup)
//   [sandwich norms, Gemma] h = mid + rmsnorm(sum of the partials) * post_feedforward_layernorm,
//   the partials' rstd from a pass over the row first (decode-branch-norm.wgsl); each workgroup then
//   writes its share of h to block 0, the residual the layer's MLP reads
//   x = rmsnorm(h) * input_layernorm                                       (folded into the GEMV load)
//   q, k, v = x Wqkv^T (+ bias); [Qwen3] q, k = rmsnorm per head (q_norm, k_norm); RoPE (rotate_half)
//   over the first ROT dims (Phi-3 partial rotary), none when P.rope is 0 (SmolLM3 NoPE layers)
//   k, v written into the paged KV cache at the row's position; q written to Q [B, NH, HS].
// A workgroup owns one unit of U rows of one head (q, k or v) for BB batch rows: U / 2 pairs
// (pair_dims, rope-pairs.wgsl: RoPE pairs d, d + ROT / 2, then the pass-through dims paired
// alike), or the whole head (U = HS) when q/k-norm needs all of it. The GEMV core walks the unit G rows at a time and stages
// the activations only once. A qkv whose parts differ in dtype (Q4_K q / k, Q6_K v) is one dispatch
// per row segment: heads from P.head0 on, W holding that segment's rows from head head0's first row.
// The `lora` variant adds each row's LoRA term to q, k, v before q/k-norm and RoPE
// (decode-lora-expand.wgsl; DecodeLora has folded the residual, so nothing is pending then).
// Consts: the GEMV tile (gemv-config.ts), NORM = true, U, HS, ROT, QK_NORM, HAS_BIAS, SANDWICH.
// BatchRow is generated from the spec (kernels/kv-layout.ts BATCH_ROW).

// Tokens per KV block (kernels/kv-layout.ts KV_BLOCK), given when the pipeline is created.
override KV_BLOCK: u32;

var<workgroup> hv: array<f32, U * BB>; // the unit's projections, [u][b]
var<workgroup> hn: array<f32, BB>;     // q/k-norm rstd per batch row

var<private> head: u32;      // over NH q heads, then NKV k heads, then NKV v heads
var<private> part: u32;      // which U-row unit of the head
var<private> b0: u32;
var<private> group_base: u32; // first unit row of the current GEMV group

// The previous layer's MLP output: the sum of its partials (sandwich norms).
fn branch_x(b: u32, k: u32) -> f32 {
  return pending_sum((b0 + b) * P.C + k);
}

fn stage_x(b: u32, k: u32) -> f32 {
  let r = (b0 + b) * P.C + k;
  if (SANDWICH) {
    var h = STREAM[P.h_in * P.bcap * P.C + r];
    if (P.pending > 0u) {
      h += branch_x(b, k) * branch_rstd[b] * VEC[P.mlp_norm_off + k];
    }
    return h;
  }
  var v = STREAM[r];
  for (var p = 0u; p < P.pending; p++) {
    v += STREAM[(1u + p) * P.bcap * P.C + r];
  }
  return v;
}

fn norm_w(k: u32) -> f32 {
  return VEC[P.norm_off + k];
}

// Unit row u -> dimension within the head: the first U / 2 rows are the first dims of pairs
// part * U/2 + u, the others their partners.
fn dim_of(u: u32) -> u32 {
  let half = U / 2u;
  if (u < half) {
    return pair_dims(part * half + u).x;
  }
  return pair_dims(part * half + (u - half)).y;
}

fn row_valid(j: u32) -> bool {
  return group_base + j < U;
}

fn row_start(j: u32) -> u32 {
  return ((head - P.head0) * HS + dim_of(group_base + j)) * P.w_stride;
}

@compute @workgroup_size(WG)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32> /*@subgroup-params*/
) {
  /*@subgroup-init*/
  head = P.head0 + wid.x / (HS / U);
  part = wid.x % (HS / U);
  b0 = wid.y * BB;
  let nb = min(BB, P.B - b0);
  if (SANDWICH && P.pending > 0u) {
    branch_norm(lid, P.C, nb, P.eps);
    // One call per row segment stages the same h: the first one writes it.
    if (P.head0 == 0u) {
      write_share(lid, wid.x, nwg.x, nb, 0u);
    }
  }
  for (var grp = 0u; grp < U; grp += G) {
    group_base = grp;
    gemv_group(lid, P.C, nb, P.eps, grp == 0u);
    for (var i = lid; i < G * BB; i += WG) {
      let u = grp + i / BB;
      if (u < U) {
        var v = ys[i] * rstd[i % BB];
        if (HAS_BIAS) {
          v += VEC[P.bias_off + head * HS + dim_of(u)];
        }
#ifdef_lora
        if (i % BB < nb) {
          v += lora_delta(b0 + i % BB, head * HS + dim_of(u));
        }
#endif_lora
        hv[u * BB + i % BB] = v;
      }
    }
    workgroupBarrier();
  }
  // From the workgroup id (not the private `head`) so the branch below is uniform for the barriers.
  let head_u = P.head0 + wid.x / (HS / U);
  let is_q = head_u < P.NH;
  let is_k = !is_q && head_u < P.NH + P.NKV;
  if (QK_NORM && (is_q || is_k)) {
    // The unit is the whole head here (U = HS).
    var sq = array<f32, BB>();
    for (var u = lid; u < U; u += WG) { // U = HS may exceed WG (small workgroups on software adapters)
      for (var b = 0u; b < BB; b++) {
        sq[b] += hv[u * BB + b] * hv[u * BB + b];
      }
    }
    let t = group_sum(lid, sq, WG);
    if (lid == 0u) {
      for (var b = 0u; b < BB; b++) {
        hn[b] = inverseSqrt(t[b] / f32(HS) + P.eps);
      }
    }
    workgroupBarrier();
    let w_off = select(P.knorm_off, P.qnorm_off, is_q);
    for (var i = lid; i < U * BB; i += WG) {
      hv[i] *= hn[i % BB] * VEC[w_off + dim_of(i / BB)];
    }
    workgroupBarrier();
  }
  for (var i = lid; i < (U / 2u) * BB; i += WG) {
    let t = i / BB;
    let b = i % BB;
    if (b < nb) {
      let row = ROWS[b0 + b];
      let d1 = dim_of(t);
      let d2 = dim_of(t + U / 2u);
      let pi = part * (U / 2u) + t; // pair index: RoPE frequency when < ROT / 2
      var x1 = hv[t * BB + b];
      var x2 = hv[(t + U / 2u) * BB + b];
      if ((is_q || is_k) && P.rope != 0u && pi < ROT / 2u) {
        let pos = min(row.pos, P.rope_positions - 1u);
        let cs = VEC[P.rope_off + 2u * (pos * (ROT / 2u) + pi)];
        let sn = VEC[P.rope_off + 2u * (pos * (ROT / 2u) + pi) + 1u];
        let r1 = x1 * cs - x2 * sn;
        let r2 = x2 * cs + x1 * sn;
        x1 = r1;
        x2 = r2;
      }
      if (is_q) {
        let o = ((b0 + b) * P.NH + head) * HS;
        Q[o + d1] = x1;
        Q[o + d2] = x2;
      } else {
        let kh = select(head - P.NH - P.NKV, head - P.NH, is_k);
        let block = BT[row.seq * P.max_blocks + row.pos / KV_BLOCK];
        let o = ((block * P.NKV + kh) * KV_BLOCK + row.pos % KV_BLOCK) * HS;
        if (is_k) {
          KC[o + d1] = x1;
          KC[o + d2] = x2;
        } else {
          VC[o + d1] = x1;
          VC[o + d2] = x2;
        }
      }
    }
  }
}
