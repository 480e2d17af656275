// LoRA on the fused decode graph (decode-graph.ts): the shrinks whose U the fused decode kernels'
// expand terms read (decode-lora-expand.wgsl), and the residual fold the first of them needs. One
// workgroup per batch row b, so it may rewrite its row of the residual in place.
//   MODE 0, before DecodeQkv:
//     h = residual + the previous layer's MLP partials
//         + scale * B_down (sum over the MLP slices of their down-shrink partials)   (its LoRA down)
//     written back to the residual (DecodeQkv and DecodeOProj then have nothing pending); the row's
//     adapter header into LU; then U_m = A_m (rmsnorm(h) * input_layernorm) for the qkv group's
//     modules m. After the last layer M is 0: the fold alone. With sandwich norms (Gemma 3) the fold
//     is h = mid + rmsnorm(that MLP output) * post_feedforward_layernorm, into block 0.
//   MODE 1, before DecodeOProj: U_o = A_o a, a the merge of the decode-attention partials.
//   MODE 2, before DecodeMlp: U_m = A_m (rmsnorm(h) * post_attention_layernorm), m in the gate|up group
//     (with sandwich norms h = block 0 + rmsnorm(o_proj's output) * its norm, and the norm is the
//     pre-feedforward one, as DecodeMlp stages them).
// LU row b, u32 words from b * LROW: [0] the slot's pool base, [1] its rank (0: no adapter), [2] its
// scale (f32 bits); U of module m at 4 + m * RMAX; the down shrink's partial of MLP slice s at
// LORA_UD + s * RMAX (written by DecodeMlp). Floats are stored as their bits: the header's integers are not
// valid floats. Pool layout: kernels/lora.wgsl.
// Sums go through group_sum (reduce-*.wgsl, BB = 1). The o shrink stages the attention merge as
// DecodeOProj does (decode-merge.wgsl).
// Consts: WG, TK, KT, RMAX, QMAX (rows per team), LROW, LORA_UD, MODE, COEF_CAP, SANDWICH, BB = 1.

// struct Slot (base, rank, scale) is generated from kernels/lora.ts LORA_SLOT.

const NONE: u32 = 0xffffffffu;
const TEAMS: u32 = WG / TK;

var<workgroup> xs: array<f32, KT>;
var<workgroup> ud: array<f32, RMAX>;
var<workgroup> coef: array<f32, COEF_CAP>; // MODE 1: merge weight of (head, split)
var<workgroup> wg_rank: u32;
var<workgroup> wg_base: u32;
var<workgroup> wg_scale: f32;
var<workgroup> wg_total: f32;

fn a_units(m: u32) -> u32 {
  return select(select(P.a2, P.a1, m == 1u), P.a0, m == 0u);
}

// The sum of v over the workgroup, returned to every invocation (group_sum gives it to the first).
fn wg_sum(lid: u32, v: f32) -> f32 {
  let t = group_sum(lid, array<f32, BB>(v), WG);
  if (lid == 0u) {
    wg_total = t[0];
  }
  return workgroupUniformLoad(&wg_total);
}

// The MLP output of row b's previous layer at column k: the sum of its partials (with the LoRA down term).
fn mlp_out(b: u32, k: u32, r: u32, down: bool, bd: u32) -> f32 {
  let i = b * P.C + k;
  var y = pending_sum(i);
  if (down) {
    var d = 0.0;
    var j = 0u;
    for (; j + 4u <= r; j += 4u) {
      let w = vec4<f32>(POOL[bd + k * r + j], POOL[bd + k * r + j + 1u], POOL[bd + k * r + j + 2u], POOL[bd + k * r + j + 3u]);
      d += w.x * ud[j];
      d += w.y * ud[j + 1u];
      d += w.z * ud[j + 2u];
      d += w.w * ud[j + 3u];
    }
    for (; j < r; j++) {
      d += POOL[bd + k * r + j] * ud[j];
    }
    y += wg_scale * d;
  }
  return y;
}

// MODE 0: folds the pending terms into row b of the residual (block 0); returns the sum of squares of
// the result. With sandwich norms the residual is then mid + rmsnorm(MLP output) * post_feedforward
// norm: a first pass writes the MLP output to the free `branch` block and sums its squares.
fn fold(lid: u32, b: u32, r: u32) -> f32 {
  let down = r > 0u && P.ud_pending > 0u;
  if (down) {
    for (var j = lid; j < r; j += WG) {
      var t = 0.0;
      for (var s = 0u; s < P.ud_pending; s++) {
        t += bitcast<f32>(LU[b * LROW + LORA_UD + s * RMAX + j]);
      }
      ud[j] = t;
    }
  }
  workgroupBarrier();
  let bd = wg_base + r * (P.down_layer * P.layer_units + P.down_b);
  var sq = 0.0;
  if (SANDWICH && P.pending > 0u) {
    for (var k = lid; k < P.C; k += WG) {
      let y = mlp_out(b, k, r, down, bd);
      STREAM[(P.branch_block * P.bcap + b) * P.C + k] = y;
      sq += y * y;
    }
    let rstd = inverseSqrt(wg_sum(lid, sq) / f32(P.C) + P.eps);
    sq = 0.0;
    for (var k = lid; k < P.C; k += WG) {
      let y = STREAM[(P.branch_block * P.bcap + b) * P.C + k];
      let h = STREAM[(P.mid_block * P.bcap + b) * P.C + k] + y * rstd * VEC[P.branch_norm_off + k];
      STREAM[b * P.C + k] = h;
      sq += h * h;
    }
    return wg_sum(lid, sq);
  }
  for (var k = lid; k < P.C; k += WG) {
    let i = b * P.C + k;
    let h = STREAM[i] + mlp_out(b, k, r, down, bd);
    STREAM[i] = h;
    sq += h * h;
  }
  return wg_sum(lid, sq);
}

// MODE 2 with sandwich norms: the residual the MLP reads, block 0 + rmsnorm(o_proj's output) *
// post_attention_layernorm (DecodeMlp writes it to `mid`); `brstd` is the branch's rstd.
fn mlp_residual(b: u32, k: u32, brstd: f32) -> f32 {
  let h = STREAM[b * P.C + k];
  if (SANDWICH) {
    return h + STREAM[(P.branch_block * P.bcap + b) * P.C + k] * brstd * VEC[P.branch_norm_off + k];
  }
  return h;
}

// The shrink's input element k of row b.
fn x_at(b: u32, k: u32, rstd: f32, brstd: f32) -> f32 {
  if (MODE == 1u) {
    let h = k / P.HS;
    return merged((b * P.NH + h) * P.S, h * P.S, k % P.HS);
  }
  if (MODE == 2u) {
    return mlp_residual(b, k, brstd) * rstd * VEC[P.norm_off + k];
  }
  return STREAM[b * P.C + k] * rstd * VEC[P.norm_off + k];
}

// POOL[a + i], or 0 past the chunk's klen elements.
fn pool_or_zero(a: u32, i: u32, klen: u32) -> f32 {
  if (i < klen) {
    return POOL[a + i];
  }
  return 0.0;
}

// U[b, m, j] = sum_k A_m[j, k] x[k] for the group's M modules: TEAMS teams of TK invocations, team g
// owning rows q = round * TEAMS + g of the M * r stacked A rows; the input staged KT at a time.
fn shrink(lid: u32, b: u32, r: u32, rstd: f32, brstd: f32) {
  let team = lid / TK;
  let lane = lid % TK;
  let rows = P.M * r;
  var acc = array<f32, QMAX>();
  for (var k0 = 0u; k0 < P.K; k0 += KT) {
    let klen = min(KT, P.K - k0);
    workgroupBarrier(); // the previous chunk has been read
    for (var i = lid; i < klen; i += WG) {
      xs[i] = x_at(b, k0 + i, rstd, brstd);
    }
    workgroupBarrier();
    for (var q = 0u; q < QMAX && q * TEAMS < rows; q++) {
      let row = q * TEAMS + team;
      if (row < rows) {
        let a = wg_base + r * (P.layer * P.layer_units + a_units(row / r)) + (row % r) * P.K + k0;
        // Four loads issued before they are used (one at a time, the 3 * 16 rows of a rank-16 q|k|v
        // shrink were a chain of ~100 dependent loads per invocation), added in the same order.
        for (var i0 = lane; i0 < klen; i0 += 4u * TK) {
          let w0 = POOL[a + i0];
          let w1 = pool_or_zero(a, i0 + TK, klen);
          let w2 = pool_or_zero(a, i0 + 2u * TK, klen);
          let w3 = pool_or_zero(a, i0 + 3u * TK, klen);
          acc[q] += w0 * xs[i0];
          if (i0 + TK < klen) {
            acc[q] += w1 * xs[i0 + TK];
          }
          if (i0 + 2u * TK < klen) {
            acc[q] += w2 * xs[i0 + 2u * TK];
          }
          if (i0 + 3u * TK < klen) {
            acc[q] += w3 * xs[i0 + 3u * TK];
          }
        }
      }
    }
  }
  let rounds = (rows + TEAMS - 1u) / TEAMS;
  for (var q = 0u; q < rounds; q++) {
    let t = group_sum(lid, array<f32, BB>(acc[q]), TK);
    let row = q * TEAMS + team;
    if (lane == 0u && row < rows) {
      LU[b * LROW + 4u + (row / r) * RMAX + row % r] = bitcast<u32>(t[0]);
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32> /*@subgroup-params*/) {
  /*@subgroup-init*/
  let b = wid.x;
  if (lid == 0u) {
    if (MODE == 0u) {
      // The row's adapter, for this call and the layer's other LoRA reads.
      let s = TOK[b];
      var slot = Slot(0u, 0u, 0.0, 0u);
      if (s != NONE) {
        slot = SLOTS[min(s, arrayLength(&SLOTS) - 1u)];
      }
      LU[b * LROW] = slot.base;
      LU[b * LROW + 1u] = slot.rank;
      LU[b * LROW + 2u] = bitcast<u32>(slot.scale);
    }
    wg_base = LU[b * LROW];
    wg_rank = LU[b * LROW + 1u];
    wg_scale = bitcast<f32>(LU[b * LROW + 2u]);
  }
  let r = workgroupUniformLoad(&wg_rank);
  var rstd = 1.0;
  if (MODE == 0u) {
    // Every row folds, with an adapter or not: the kernels after it find nothing pending.
    rstd = inverseSqrt(fold(lid, b, r) / f32(P.C) + P.eps);
    storageBarrier(); // the shrink reads back the row this workgroup just wrote
  }
  if (r == 0u || P.M == 0u) {
    return;
  }
  if (MODE == 1u) {
    for (var h = lid; h < P.NH; h += WG) {
      merge_weights((b * P.NH + h) * P.S, h * P.S);
    }
    workgroupBarrier();
  }
  var brstd = 1.0;
  if (MODE == 2u) {
    if (SANDWICH) {
      var bq = 0.0;
      for (var k = lid; k < P.C; k += WG) {
        let y = STREAM[(P.branch_block * P.bcap + b) * P.C + k];
        bq += y * y;
      }
      brstd = inverseSqrt(wg_sum(lid, bq) / f32(P.C) + P.eps);
    }
    var sq = 0.0;
    for (var k = lid; k < P.C; k += WG) {
      let h = mlp_residual(b, k, brstd);
      sq += h * h;
    }
    rstd = inverseSqrt(wg_sum(lid, sq) / f32(P.C) + P.eps);
  }
  shrink(lid, b, r, rstd, brstd);
}
