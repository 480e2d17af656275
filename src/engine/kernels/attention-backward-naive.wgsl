// Attention backward, naive (the readable definition of attention-backward-common.wgsl's math and
// the GPU oracle of the tiled kernels): one invocation per (token, query head) for dq, walking its
// keys; one invocation per (token, kv head) for dk, dv, walking the later queries of its sequence
// and the G heads of the group, accumulating straight into dqkv (it owns those elements).

@compute @workgroup_size(64)
fn dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (idx >= params.T * NH) {
    return;
  }
  let t = idx / NH;
  let qh = idx % NH;
  let h = qh / G;
  let place = find_row(t);
  let row = rows[place.x];
  let qpos = row.pos + t - place.y;
  let lse = stats[idx];
  let D = stats[params.T * NH + idx];
  let dst = t * QKV4 + qh * HS4;
  for (var i = 0u; i < HS4; i++) {
    dqkv[dst + i] = vec4<f32>(0.0);
  }
  for (var p = first_key(qpos, params.window); p <= qpos; p++) {
    let at = kv_index(row.seq, p, h, NKV, HS4, params.maxBlocksPerSeq);
    var s = 0.0;
    var dp = 0.0;
    for (var i = 0u; i < HS4; i++) {
      s += dot(q[idx * HS4 + i], kCache[at + i]);
      dp += dot(dout[idx * HS4 + i], vCache[at + i]);
    }
    let pr = exp(s * params.scale - lse);
    let ds = pr * (dp - D) * params.scale;
    for (var i = 0u; i < HS4; i++) {
      dqkv[dst + i] += ds * kCache[at + i];
    }
  }
}

@compute @workgroup_size(64)
fn dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (idx >= params.T * NKV) {
    return;
  }
  let t = idx / NKV;
  let h = idx % NKV;
  let place = find_row(t);
  let row = rows[place.x];
  let kpos = row.pos + t - place.y;
  let at = kv_index(row.seq, kpos, h, NKV, HS4, params.maxBlocksPerSeq);
  let dk0 = t * QKV4 + (NH + h) * HS4;
  let dv0 = t * QKV4 + (NH + NKV + h) * HS4;
  for (var i = 0u; i < HS4; i++) {
    dqkv[dk0 + i] = vec4<f32>(0.0);
    dqkv[dv0 + i] = vec4<f32>(0.0);
  }
  // Queries at or after this key, in the same row: tokens t .. first + count - 1.
  for (var tq = t; tq < place.y + row.count; tq++) {
    if (!sees(row.pos + tq - place.y, kpos)) {
      break; // later queries are further past the window
    }
    for (var g = 0u; g < G; g++) {
      let qi = tq * NH + h * G + g;
      var s = 0.0;
      var dp = 0.0;
      for (var i = 0u; i < HS4; i++) {
        s += dot(q[qi * HS4 + i], kCache[at + i]);
        dp += dot(dout[qi * HS4 + i], vCache[at + i]);
      }
      let pr = exp(s * params.scale - stats[qi]);
      let ds = pr * (dp - stats[params.T * NH + qi]) * params.scale;
      for (var i = 0u; i < HS4; i++) {
        dqkv[dk0 + i] += ds * q[qi * HS4 + i];
        dqkv[dv0 + i] += pr * dout[qi * HS4 + i];
      }
    }
  }
}
