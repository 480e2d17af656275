/**
 * RMSNorm, reference (HF LlamaRMSNorm / Qwen3RMSNorm semantics in f32):
 * out = (x * rsqrt(mean(x^2) + eps)) * weight. Legend: N rows, C channels.
 * Forward caches rstd per row (what a backward needs). Not here: the GPU kernels (kernels/rmsnorm.ts
 * and the norm folded into the decode GEMVs).
 */
import type { Floats } from './floats';

export function rmsnormForward(
  out: Floats, // (N, C)
  rstd: Floats | null, // (N,) cached 1/sqrt(mean(x^2)+eps), or null
  inp: Floats, // (N, C)
  weight: Floats, // (C,)
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    let ss = 0;
    for (let c = 0; c < C; c++) ss += inp[n * C + c] * inp[n * C + c];
    const r = 1 / Math.sqrt(ss / C + eps);
    if (rstd) rstd[n] = r;
    for (let c = 0; c < C; c++) out[n * C + c] = inp[n * C + c] * r * weight[c];
  }
}

/**
 * Backward of rmsnormForward, accumulating. With n = x * rstd (the normalised row) the forward was
 * out = n * w, so dn = dout * w and, since rstd depends on the whole row,
 *   dinp += rstd * (dn - n * mean(dn * n))
 * dweight += dout * n summed over rows (the base model's norms are frozen: pass null).
 */
export function rmsnormBackward(
  dinp: Floats, // (N, C) accumulated
  dweight: Floats | null, // (C,) accumulated, or null
  dout: Floats, // (N, C)
  inp: Floats, // (N, C)
  weight: Floats, // (C,)
  rstd: Floats, // (N,) saved by the forward
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const r = rstd[n];
    let dot = 0; // sum_c dn_c * n_c
    for (let c = 0; c < C; c++) dot += dout[n * C + c] * weight[c] * inp[n * C + c] * r;
    const mean = dot / C;
    for (let c = 0; c < C; c++) {
      const norm = inp[n * C + c] * r;
      dinp[n * C + c] += r * (dout[n * C + c] * weight[c] - norm * mean);
      if (dweight) dweight[c] += dout[n * C + c] * norm;
    }
  }
}
