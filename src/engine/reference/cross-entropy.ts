/**
 * Log-softmax over the vocabulary and its backward given per-token loss coefficients, reference.
 * Every training loss Hearth computes (SFT's token-mean cross-entropy, ART's RL policy losses) is,
 * as a function of the logits, L = sum_t c_t * (-logprob_t(target_t)) with c_t fixed during the
 * backward (the coefficients of docs/reference/art-compat.md §3.4 / §4, computed by engine/train from the new and
 * old logprobs). So the backward of every loss is one formula:
 *   dlogits[t] = c_t * (softmax(logits[t]) - onehot(target_t)).
 * Legend: T rows (positions), V vocabulary. Row t's target is the token at position t + 1.
 *
 * Not here: the coefficients themselves (engine/train), the fused GPU kernel (engine/train).
 */
import type { Floats } from './floats';

/** log sum_v exp(row[v]) in f64, max-subtracted. */
function rowLogSumExp(logits: Floats, base: number, V: number): number {
  let max = -Infinity;
  for (let v = 0; v < V; v++) if (logits[base + v] > max) max = logits[base + v];
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(logits[base + v] - max);
  return max + Math.log(sum);
}

/**
 * logprobs[t] = log_softmax(logits[t])[targets[t]]; entropy[t] (when given) = -sum_v p_v log p_v,
 * the entropy of the model's next-token distribution at row t.
 */
export function crossEntropyForward(
  logprobs: Floats, // (T,)
  entropy: Floats | null, // (T,) or null
  logits: Floats, // (T, V)
  targets: ArrayLike<number>, // (T,)
  T: number,
  V: number,
): void {
  for (let t = 0; t < T; t++) {
    const base = t * V;
    const target = targets[t];
    if (!(target >= 0 && target < V)) throw new Error(`cross-entropy: target ${target} of row ${t} is outside the vocabulary [0, ${V})`);
    const lse = rowLogSumExp(logits, base, V);
    logprobs[t] = logits[base + target] - lse;
    if (entropy) {
      let h = 0;
      for (let v = 0; v < V; v++) {
        const lp = logits[base + v] - lse;
        h -= Math.exp(lp) * lp;
      }
      entropy[t] = h;
    }
  }
}

/**
 * Backward of L = sum_t coeffs[t] * (-logprobs[t]), accumulating:
 *   dlogits[t] += coeffs[t] * (softmax(logits[t]) - onehot(targets[t])).
 * Rows whose coefficient is 0 (not trained) are skipped, so their target may be anything.
 */
export function crossEntropyBackward(
  dlogits: Floats, // (T, V) accumulated
  logits: Floats, // (T, V)
  targets: ArrayLike<number>, // (T,)
  coeffs: ArrayLike<number>, // (T,)
  T: number,
  V: number,
): void {
  for (let t = 0; t < T; t++) {
    const c = coeffs[t];
    if (c === 0) continue;
    const base = t * V;
    const target = targets[t];
    if (!(target >= 0 && target < V)) throw new Error(`cross-entropy: target ${target} of row ${t} is outside the vocabulary [0, ${V})`);
    const lse = rowLogSumExp(logits, base, V);
    for (let v = 0; v < V; v++) dlogits[base + v] += c * Math.exp(logits[base + v] - lse);
    dlogits[base + target] -= c;
  }
}
