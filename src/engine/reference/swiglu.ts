/**
 * SwiGLU activation of the MLP, reference: out = silu(gate) * up, silu(x) = x / (1 + e^-x).
 * Legend: N rows, F intermediate size.
 */

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

export function swigluForward(
  out: Float32Array, // (N, F)
  gate: Float32Array, // (N, F)
  up: Float32Array, // (N, F)
  N: number,
  F: number,
): void {
  for (let i = 0; i < N * F; i++) out[i] = silu(gate[i]) * up[i];
}
