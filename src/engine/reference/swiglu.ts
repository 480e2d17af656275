/**
 * SwiGLU activation of the MLP, reference: out = silu(gate) * up, silu(x) = x / (1 + e^-x); and Gemma's
 * GeGLU, out = gelu_tanh(gate) * up.
 * Legend: N rows, F intermediate size.
 */
import type { MlpActivation } from '../kernels/swiglu';
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

/**
 * GELU, tanh approximation (torch gelu(approximate='tanh'), transformers "gelu_pytorch_tanh"; llama.cpp
 * ggml_gelu): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
export function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
}

/** d/dx geluTanh: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2), t = tanh(...). */
export function geluTanhGrad(x: number): number {
  const k = Math.sqrt(2 / Math.PI);
  const t = Math.tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}

/** The gated MLP activation of either family: silu (SwiGLU) or gelu_tanh (Gemma's GeGLU), out = act(gate) * up;
 *  the arguments of swigluForward (out, gate, up: (N, F)). */
export function mlpActivationForward(act: MlpActivation, ...args: Parameters<typeof swigluForward>): void {
  if (act === 'silu') return swigluForward(...args);
  const [out, gate, up, N, F] = args;
  for (let i = 0; i < N * F; i++) out[i] = geluTanh(gate[i]) * up[i];
}

/** Backward of mlpActivationForward, accumulating: dgate += dout * u * act'(g), dup += dout * act(g); the
 *  arguments of swigluBackward. */
export function mlpActivationBackward(act: MlpActivation, ...args: Parameters<typeof swigluBackward>): void {
  if (act === 'silu') return swigluBackward(...args);
  const [dgate, dup, dout, gate, up, N, F] = args;
  for (let i = 0; i < N * F; i++) {
    dgate[i] += dout[i] * up[i] * geluTanhGrad(gate[i]);
    dup[i] += dout[i] * geluTanh(gate[i]);
  }
}
