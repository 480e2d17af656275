/**
 * SwiGLU activation of the MLP, reference: out = silu(gate) * up, silu(x) = x / (1 + e^-x).
 * Legend: N rows, F intermediate size.
 */
import type { Floats } from './floats';

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

export function swigluForward(
  out: Floats, // (N, F)
  gate: Floats, // (N, F)
  up: Floats, // (N, F)
  N: number,
  F: number,
): void {
  for (let i = 0; i < N * F; i++) out[i] = silu(gate[i]) * up[i];
}

/**
 * Backward of swigluForward, accumulating. The forward was out = silu(g) * u with
 * silu(g) = g * sig(g), so dsilu/dg = sig(g) * (1 + g * (1 - sig(g))) and
 *   dgate += dout * u * sig(g) * (1 + g * (1 - sig(g))),  dup += dout * silu(g).
 */
export function swigluBackward(
  dgate: Floats, // (N, F) accumulated
  dup: Floats, // (N, F) accumulated
  dout: Floats, // (N, F)
  gate: Floats, // (N, F)
  up: Floats, // (N, F)
  N: number,
  F: number,
): void {
  for (let i = 0; i < N * F; i++) {
    const g = gate[i];
    const sig = 1 / (1 + Math.exp(-g));
    dgate[i] += dout[i] * up[i] * sig * (1 + g * (1 - sig));
    dup[i] += dout[i] * g * sig;
  }
}
