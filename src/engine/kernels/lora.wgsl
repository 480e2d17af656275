// LoRA for batches that mix adapters (S-LoRA / Punica style): every token row t carries an adapter
// slot (TOK[t], 0xffffffff = none), and each slot's A and B matrices live in one f32 pool.
//   shrink:  U[t, m, j] = sum_k A_m[j, k] X[t, k]            (j < rank of the row's slot)
//   expand:  Y[t, c]   += scale * sum_j B_m[n, j] U[t, m, j]  (column c = n0_m + n of module m)
// A module group (q|k|v, o, gate|up, down) shares one input X, and its outputs are contiguous
// columns of Y (the fused qkv / gate_up projection), so one dispatch of each covers the group.
//
// Pool layout of a slot (element offsets from SLOTS[s].base; r = its rank): layer l, module m has
// A_m [r, in_m] at r * (l * layer_units + a_units[m]) and B_m [out_m, r] at
// r * (l * layer_units + b_units[m]); layer_units = sum of (in + out) over the seven modules.
// Consts: WG (256), TK (threads per row of A in shrink), KT (staged inputs), RMAX, ROUNDS = RMAX / (WG / TK).

// struct Slot (base, rank, scale) is generated from kernels/lora.ts LORA_SLOT.

const NONE: u32 = 0xffffffffu;
const TEAMS: u32 = WG / TK;

fn units_of(m: u32) -> u32 {
  return select(select(P.units2, P.units1, m == 1u), P.units0, m == 0u);
}

#ifdef_shrink

var<workgroup> xs: array<f32, KT>;
var<workgroup> red: array<f32, WG>;
var<workgroup> wg_slot: u32;
var<workgroup> wg_rank: u32;

// Workgroup (module m, token t): TEAMS teams of TK threads, team g owning rows j = q * TEAMS + g of
// A_m (q < ROUNDS); each thread strides along k (a team reads TK consecutive floats per load), the
// input staged KT at a time in workgroup memory; then a tree sum inside each team.
@compute @workgroup_size(WG)
fn shrink(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let m = wid.x;
  let t = wid.y;
  if (lid == 0u) {
    wg_slot = TOK[t];
    wg_rank = select(SLOTS[min(wg_slot, arrayLength(&SLOTS) - 1u)].rank, 0u, wg_slot == NONE);
  }
  let r = workgroupUniformLoad(&wg_rank);
  if (r == 0u) {
    return; // no adapter on this row: the expand skips it too
  }
  let slot = SLOTS[TOK[t]];
  let team = lid / TK;
  let lane = lid % TK;
  let a_base = slot.base + r * (P.layer * P.layer_units + units_of(m));
  var acc = array<f32, ROUNDS>();
  for (var k0 = 0u; k0 < P.K; k0 += KT) {
    let klen = min(KT, P.K - k0);
    workgroupBarrier(); // the previous chunk has been read
    for (var i = lid; i < klen; i += WG) {
      xs[i] = X[P.x_off + t * P.x_stride + k0 + i];
    }
    workgroupBarrier();
    for (var q = 0u; q < ROUNDS; q++) {
      let j = q * TEAMS + team;
      if (j < r) {
        let row = a_base + j * P.K + k0;
        for (var i = lane; i < klen; i += TK) {
          acc[q] += POOL[row + i] * xs[i];
        }
      }
    }
  }
  let rounds = (r + TEAMS - 1u) / TEAMS;
  for (var q = 0u; q < rounds; q++) {
    red[lid] = acc[q];
    workgroupBarrier();
    for (var s = TK / 2u; s > 0u; s = s >> 1u) {
      if (lane < s) {
        red[lid] += red[lid + s];
      }
      workgroupBarrier();
    }
    let j = q * TEAMS + team;
    if (lane == 0u && j < r) {
      U[(t * 3u + m) * RMAX + j] = red[lid];
    }
    workgroupBarrier();
  }
}
#endif_shrink

#ifdef_expand

// One invocation per output column of one token row: a rank-r dot of B_m's row (r contiguous
// floats: consecutive invocations read consecutive memory) with the row's U.
@compute @workgroup_size(WG)
fn expand(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let c = gid.x;
  let t = wid.y;
  let s = TOK[t];
  if (c >= P.K || s == NONE) {
    return;
  }
  var m = 0u;
  var n = c;
  if (P.M > 1u && n >= P.width0) {
    m = 1u;
    n -= P.width0;
    if (P.M > 2u && n >= P.width1) {
      m = 2u;
      n -= P.width1;
    }
  }
  let slot = SLOTS[s];
  let r = slot.rank;
  let b_row = slot.base + r * (P.layer * P.layer_units + units_of(m)) + n * r;
  let u0 = (t * 3u + m) * RMAX;
  var acc = 0.0;
  for (var j = 0u; j < r; j++) {
    acc += POOL[b_row + j] * U[u0 + j];
  }
  let yi = P.x_off + t * P.x_stride + c;
  Y[yi] += slot.scale * acc;
}
#endif_expand
