/**
 * Gradient clipping and AdamW, reference (PyTorch semantics: torch.nn.utils.clip_grad_norm_ and
 * torch.optim.AdamW with its defaults amsgrad=False, maximize=False). f64 arithmetic on f32 state;
 * the oracle of kernels/grad-norm.ts and kernels/adamw.ts.
 */

/** Global L2 norm of `grads` and the factor min(1, maxNorm / (norm + 1e-6)) (1 when maxNorm is 0). */
export function clipGradNorm(grads: ArrayLike<number>, maxNorm: number): { norm: number; clip: number } {
  let s = 0;
  for (let i = 0; i < grads.length; i++) s += grads[i] * grads[i];
  const norm = Math.sqrt(s);
  return { norm, clip: maxNorm > 0 ? Math.min(1, maxNorm / (norm + 1e-6)) : 1 };
}

/** One AdamW update in place: g = grads * clip; decoupled decay; 1-based bias correction at `step`. */
export function adamwStep(
  params: Float32Array, // (n,) updated
  m: Float32Array, // (n,) exp_avg, updated
  v: Float32Array, // (n,) exp_avg_sq, updated
  grads: ArrayLike<number>, // (n,)
  clip: number,
  h: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; step: number },
): void {
  const bc1 = 1 - h.beta1 ** h.step;
  const bc2 = 1 - h.beta2 ** h.step;
  for (let i = 0; i < params.length; i++) {
    const g = grads[i] * clip;
    let p = params[i] * (1 - h.lr * h.weightDecay);
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    p -= (h.lr / bc1) * (m[i] / (Math.sqrt(v[i]) / Math.sqrt(bc2) + h.eps));
    params[i] = p;
  }
}
