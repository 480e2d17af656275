/**
 * Backward of the prefill q/k/v preparation (reference/attention-paged.ts `qkvPrepForward`),
 * composed from the op references in reverse order: per token, RoPE backward of each q and k head
 * (reference/rope.ts), then Qwen3's per-head RMSNorm backward (reference/rmsnorm.ts) from the saved
 * projection. From the gradients after RoPE (dq [T, NH, HS], dk [T, NKV, HS]) and of v, it builds
 * the gradient of the QKV projection [T, (NH + 2 NKV) * HS], accumulating. The oracle of
 * QkvPrepBackward (kernels/qkv-prep-backward.ts).
 */
import type { BatchRow } from '../kernels/kv-layout';
import type { RopeFreqs } from '../model/config/rope';
import type { QkNorm } from './attention-paged';
import type { Floats } from './floats';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward } from './rope';

export function qkvPrepBackward(
  dqkv: Floats, // [T, (NH + 2 NKV) * HS] accumulated
  dq: Floats, // [T, NH, HS] gradient of q after RoPE
  dk: Floats, // [T, NKV, HS] gradient of k after RoPE
  dv: Floats, // [T, NKV, HS]
  qkv: Floats, // [T, (NH + 2 NKV) * HS] the forward's projection
  norm: QkNorm | null,
  invFreq: Float32Array | RopeFreqs, // [R / 2] (model/config/rope.ts; empty: no RoPE, a NoPE layer)
  rows: readonly BatchRow[],
  NH: number,
  NKV: number,
  HS: number,
): void {
  const width = (NH + 2 * NKV) * HS;
  let t = 0;
  for (const row of rows) {
    for (let i = 0; i < row.count; i++, t++) {
      const pos = [row.pos + i];
      // q, k = rope(norm(p)) per head; undo RoPE, then the norm
      const dqn = new Float64Array(NH * HS);
      const dkn = new Float64Array(NKV * HS);
      ropeBackward(dqn, dq.subarray(t * NH * HS, (t + 1) * NH * HS), pos, invFreq, 1, NH, HS);
      ropeBackward(dkn, dk.subarray(t * NKV * HS, (t + 1) * NKV * HS), pos, invFreq, 1, NKV, HS);
      const row0 = t * width;
      const p = qkv.subarray(row0, row0 + width);
      const d = dqkv.subarray(row0, row0 + width);
      if (norm) {
        const pq = p.subarray(0, NH * HS);
        const pk = p.subarray(NH * HS, (NH + NKV) * HS);
        const rq = new Float64Array(NH);
        const rk = new Float64Array(NKV);
        rmsnormForward(new Float64Array(NH * HS), rq, pq, norm.q, NH, HS, norm.eps);
        rmsnormForward(new Float64Array(NKV * HS), rk, pk, norm.k, NKV, HS, norm.eps);
        rmsnormBackward(d.subarray(0, NH * HS), null, dqn, pq, norm.q, rq, NH, HS);
        rmsnormBackward(d.subarray(NH * HS, (NH + NKV) * HS), null, dkn, pk, norm.k, rk, NKV, HS);
      } else {
        for (let e = 0; e < NH * HS; e++) d[e] += dqn[e];
        for (let e = 0; e < NKV * HS; e++) d[NH * HS + e] += dkn[e];
      }
      for (let e = 0; e < NKV * HS; e++) d[(NH + NKV) * HS + e] += dv[t * NKV * HS + e];
    }
  }
}
