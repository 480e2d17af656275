// Shared by the attention backward kernels (attention-backward.wgsl tiled, attention-backward-naive.wgsl),
// after attention-common.wgsl (BatchRow, kv_index, NEG_BIG). Consts: HS (a multiple of 4), NKV, G.
//
// The forward (attention-prefill.wgsl) was, per query row i = (token, head) and key j of its sequence:
//   s_ij = q_i . k_j * scale,  P_ij = exp(s_ij - lse_i) (causal: j <= position of i, and with a
//   sliding window position of i - j < window),  o_i = sum_j P_ij v_j
// and the backward (FlashAttention-2, arXiv 2307.08691 Alg. 2), P recomputed from q, k and lse:
//   D_i = dO_i . o_i   (= sum_j P_ij dP_ij),  dP_ij = dO_i . v_j,  dS_ij = P_ij (dP_ij - D_i)
//   dv_j = sum_i P_ij dO_i,  dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_i dS_ij q_i
// where a kv head's dk, dv sum over the G query heads that read it (repeat_kv's backward).
// Gradients land in the layout of the QKV projection, dqkv [T, (NH + 2 NKV) * HS], so the next
// steps (RoPE / q-k norm backward in place, then one dX GEMM through the fused weight) need no copy.

const NH: u32 = NKV * G;
const HS4: u32 = HS / 4u;
const QKV4: u32 = (NH + 2u * NKV) * HS4; // vec4s per token row of dqkv

// Whether a query at qpos sees the key at kpos (causal, within the window when window > 0).
fn sees(qpos: u32, kpos: u32) -> bool {
  return kpos <= qpos && (params.window == 0u || qpos - kpos < params.window);
}

// D = dO . o per (token, head), the first of the three dispatches. One invocation each.
@compute @workgroup_size(64)
fn delta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (idx >= params.T * NH) {
    return;
  }
  var acc = 0.0;
  for (var i = 0u; i < HS4; i++) {
    acc += dot(dout[idx * HS4 + i], o_fwd[idx * HS4 + i]);
  }
  stats[params.T * NH + idx] = acc;
}
