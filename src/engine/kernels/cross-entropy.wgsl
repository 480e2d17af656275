// Fused log-softmax over the vocabulary for training (the trainer's head): per logits row, the
// target token's logprob and the distribution's entropy, and with GRAD the logits backward in place,
//   dlogits[v] = c * (softmax[v] - onehot(target)[v])
// (reference/cross-entropy.ts). One workgroup per row: each invocation keeps an online
// (max m, sum l = sum e^(z - m), s = sum e^(z - m) z) over its strided columns, then the workgroup
// merges the WG states in a fixed tree (deterministic, no subgroups), so
//   lse = m + log l,  logprob = z[target] - lse,  entropy = lse - s / l.
// A row whose target is NO_TARGET (the last position of a sequence) gets NaN as its logprob and
// no gradient. Consts: WG (a power of two), GRAD, SERIAL.
//
// SERIAL (software adapters): one invocation per row, WG rows per workgroup, no workgroup memory
// and no barrier, which is what such adapters charge for; the same online softmax, so the same math.

const NO_TARGET: u32 = 0xffffffffu;
const NEG_BIG: f32 = -3.0e38;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_l: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;

// The online softmax state of v = v0, v0 + step, .. < V of the row at base.
fn row_state(base: u32, v0: u32, step: u32) -> vec3<f32> {
  var m = NEG_BIG;
  var l = 0.0;
  var s = 0.0;
  for (var v = v0; v < P.V; v += step) {
    let z = LOGITS[base + v];
    if (z > m) {
      let k = exp(m - z);
      l = l * k + 1.0;
      s = s * k + z;
      m = z;
    } else {
      let e = exp(z - m);
      l += e;
      s += e * z;
    }
  }
  return vec3<f32>(m, l, s);
}

// Logprob and entropy of row r from its merged state; with GRAD, dlogits over v0, v0 + step, ...
fn row_outputs(r: u32, lse: f32, l: f32, s: f32, write: bool) {
  let row = P.row0 + r;
  let tgt = TARGETS[row];
  if (write) {
    var nan_bits = 0x7fc00000u; // a var, so the NaN is not a (forbidden) constant expression
    var lp = bitcast<f32>(nan_bits); // no target
    if (tgt != NO_TARGET) {
      lp = LOGITS[r * P.ld + tgt] - lse;
    }
    STATS[P.lp_off + row] = lp;
    STATS[P.ent_off + row] = lse - s / l;
  }
}

fn row_grad(r: u32, lse: f32, v0: u32, step: u32) {
  let base = r * P.ld;
  let row = P.row0 + r;
  let tgt = TARGETS[row];
  let c = COEF[row];
  if (tgt == NO_TARGET || c == 0.0) {
    for (var v = v0; v < P.V; v += step) {
      LOGITS[base + v] = 0.0;
    }
  } else {
    for (var v = v0; v < P.V; v += step) {
      let p = exp(LOGITS[base + v] - lse);
      LOGITS[base + v] = c * (p - select(0.0, 1.0, v == tgt));
    }
  }
}

@compute @workgroup_size(WG)
fn serial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = gid.x + gid.y * nwg.x * WG;
  if (r >= P.R) {
    return;
  }
  let st = row_state(r * P.ld, 0u, 1u);
  let lse = st.x + log(st.y);
  row_outputs(r, lse, st.y, st.z, true);
  if (GRAD) {
    row_grad(r, lse, 0u, 1u);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = wid.x + wid.y * nwg.x;
  // r is uniform across the workgroup: returning keeps the barriers below in uniform control flow.
  if (r >= P.R) {
    return;
  }
  let st = row_state(r * P.ld, lid, WG);
  red_m[lid] = st.x;
  red_l[lid] = st.y;
  red_s[lid] = st.z;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half >>= 1u) {
    if (lid < half) {
      let m1 = red_m[lid];
      let m2 = red_m[lid + half];
      let mm = max(m1, m2);
      let a = exp(m1 - mm);
      let b = exp(m2 - mm);
      red_m[lid] = mm;
      red_l[lid] = red_l[lid] * a + red_l[lid + half] * b;
      red_s[lid] = red_s[lid] * a + red_s[lid + half] * b;
    }
    workgroupBarrier();
  }
  let lse = red_m[0] + log(red_l[0]);
  row_outputs(r, lse, red_l[0], red_s[0], lid == 0u);
  if (GRAD) {
    // Invocation 0 has read the target's logit above before anyone overwrites it.
    workgroupBarrier();
    row_grad(r, lse, lid, WG);
  }
}
