/**
 * RMSNorm, reference (HF LlamaRMSNorm / Qwen3RMSNorm semantics in f32):
 * out = (x * rsqrt(mean(x^2) + eps)) * weight. Legend: N rows, C channels.
 * Forward caches rstd per row (what a backward needs). Not here: the GPU kernels (kernels/rmsnorm.ts
 * and the norm folded into the decode GEMVs).
 */

export function rmsnormForward(
  out: Float32Array, // (N, C)
  rstd: Float32Array | null, // (N,) cached 1/sqrt(mean(x^2)+eps), or null
  inp: Float32Array, // (N, C)
  weight: Float32Array, // (C,)
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
