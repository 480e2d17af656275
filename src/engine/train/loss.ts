/**
 * The per-token loss coefficients of one optimizer step: everything the trainer's backward needs
 * to know about the loss. Every loss Hearth trains with is, as a function of the policy's logprobs
 * new_i of the step's tokens, L(new); the logits backward is then
 *   dlogits_i = c_i (softmax - onehot(token_i)),  c_i = -dL/dnew_i
 * (reference/cross-entropy.ts). This file computes L and c_i on the CPU in f64, between the
 * forward submission that produced new_i and the backward submission that consumes c_i.
 *
 * - SFT (art-compat.md §4): L = -sum_i m_i w_i new_i / sum_i m_i, the token mean of the
 *   cross-entropy over the step's trainable tokens (w = 1 unless the service gives weights).
 * - RL (art-compat.md §3.4, ART's src/art/loss.py term by term): delta_i = new_i - old_i (old
 *   unknown: old = sg(new), so delta = 0 with derivative 1); rho per importance_sampling_level
 *   (sequence means run over the trainable tokens of an importanceGroup); rho <- min(rho, M) when
 *   max_negative_advantage_importance_sampling_weight is set (every token, as ART does); rho <- 0
 *   outside (1 - eps, 1 + eps_high) with mask_prob_ratio; A <- A - tau sg(delta) with kimi_k2_tau;
 *   PPO: l = -min(rho A, clip(rho) A); CISPO: l = -sg(clip(rho)) A new;
 *   L = sum_i l_i w_i m_i / (sum_i m_i + 1e-6).
 *   Gradients follow torch's conventions where the formula has kinks: clamp passes the gradient on
 *   its closed interval, torch.where on its condition, and min splits a tie in half.
 *
 * Token i of a sequence is predicted from tokens < i; index 0 is never trainable.
 * Not here: advantages, weights and their normalisation over the job (the service's), the GPU.
 */
import type { LossSpec, TrainingSequence } from './types';

export interface StepLoss {
  /** L: SFT mean cross-entropy, RL policy loss. */
  loss: number;
  /** RL only (equals loss: Hearth adds no KL term). */
  policyLoss: number | null;
  /** Per sequence, per token i: c_i = -dL/dnew_i (0 where the token is not trained). */
  coefficients: Float64Array[];
  /** Sum of the trainable masks over the step. */
  trainableTokens: number;
  /**
   * RL only: max over trained tokens with a known old logprob of |exp(new - old) - 1|, how far
   * the trainer's policy is from the sampler's (0 when the step is on-policy; issue 16). Null
   * when no token has an old logprob.
   */
  maxRatioDeviation: number | null;
}

function checkShapes(seqs: readonly TrainingSequence[], values: readonly ArrayLike<number>[], what: string): void {
  if (values.length !== seqs.length) throw new Error(`loss: ${values.length} ${what} arrays for ${seqs.length} sequences`);
  seqs.forEach((s, b) => {
    if (s.trainable.length !== s.tokens.length) throw new Error(`loss: sequence ${b} has ${s.trainable.length} mask entries for ${s.tokens.length} tokens`);
    if (values[b].length !== s.tokens.length) throw new Error(`loss: sequence ${b} has ${values[b].length} ${what} for ${s.tokens.length} tokens`);
    if (s.tokens.length > 0 && s.trainable[0]) throw new Error(`loss: sequence ${b} marks token 0 trainable, but nothing predicts it`);
  });
}

/** L and c for one step, from the policy's current logprobs of every token (NaN at index 0). */
export function stepLoss(seqs: readonly TrainingSequence[], newLogprobs: readonly ArrayLike<number>[], spec: LossSpec): StepLoss {
  checkShapes(seqs, newLogprobs, 'logprobs');
  return spec.kind === 'sft' ? sftLoss(seqs, newLogprobs) : rlLoss(seqs, newLogprobs, spec);
}

function sftLoss(seqs: readonly TrainingSequence[], newLogprobs: readonly ArrayLike<number>[]): StepLoss {
  let trainable = 0;
  for (const s of seqs) for (let i = 0; i < s.trainable.length; i++) trainable += s.trainable[i] ? 1 : 0;
  let loss = 0;
  const coefficients = seqs.map((s, b) => {
    const c = new Float64Array(s.tokens.length);
    if (trainable === 0) return c;
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      const w = s.weights ? s.weights[i] : 1;
      c[i] = w / trainable;
      loss -= c[i] * newLogprobs[b][i];
    }
    return c;
  });
  return { loss, policyLoss: null, coefficients, trainableTokens: trainable, maxRatioDeviation: null };
}

type RlSpec = Extract<LossSpec, { kind: 'rl' }>;

function rlLoss(seqs: readonly TrainingSequence[], newLogprobs: readonly ArrayLike<number>[], spec: RlSpec): StepLoss {
  const eps = spec.epsilon;
  const epsHigh = spec.epsilonHigh;
  const lo = 1 - eps;
  const hi = 1 + epsHigh;
  const level = spec.importanceSamplingLevel;
  // ART tests these with Python truthiness: 0 and null both mean "off".
  const M = spec.maxNegativeAdvantageImportanceSamplingWeight || null;
  const tau = spec.kimiK2Tau || null;

  // Flatten the step: one entry per token of every sequence.
  let trainable = 0;
  let maxRatioDeviation: number | null = null;
  const delta = seqs.map((s, b) => {
    if (!s.advantages) throw new Error(`loss: RL sequence ${b} has no advantages`);
    const d = new Float64Array(s.tokens.length);
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      trainable++;
      const old = s.oldLogprobs ? s.oldLogprobs[i] : NaN;
      d[i] = Number.isNaN(old) ? 0 : newLogprobs[b][i] - old;
      if (!Number.isNaN(old)) maxRatioDeviation = Math.max(maxRatioDeviation ?? 0, Math.abs(Math.exp(d[i]) - 1));
    }
    return d;
  });
  const D = trainable + 1e-6;

  // Sequence-level ratio: mean of delta over the trainable tokens of each importance group.
  const groupOf = seqs.map((s, b) => s.importanceGroup ?? b);
  const groupSum = new Map<number, number>();
  const groupCount = new Map<number, number>();
  seqs.forEach((s, b) => {
    const g = groupOf[b];
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      groupSum.set(g, (groupSum.get(g) ?? 0) + delta[b][i]);
      groupCount.set(g, (groupCount.get(g) ?? 0) + 1);
    }
  });
  const groupRatio = (g: number) => Math.exp((groupSum.get(g) ?? 0) / Math.max(groupCount.get(g) ?? 0, 1));

  let loss = 0;
  const coefficients = seqs.map((s) => new Float64Array(s.tokens.length));
  // dL/d(sequence ratio part) summed over each group's tokens, spread over the group afterwards.
  const groupGrad = new Map<number, number>();
  seqs.forEach((s, b) => {
    const g = groupOf[b];
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      const w = s.weights ? s.weights[i] : 1;
      const coef = w / D; // dL/dl_i
      const tokRatio = Math.exp(delta[b][i]);
      const seqRatio = level === 'token' ? 1 : groupRatio(g);
      let rho: number;
      // d rho / d(delta_i) (token part) and d rho / d(mu_g) (sequence part).
      let dTok: number;
      let dSeq: number;
      switch (level) {
        case 'token':
          rho = tokRatio;
          dTok = tokRatio;
          dSeq = 0;
          break;
        case 'sequence':
          rho = seqRatio;
          dTok = 0;
          dSeq = seqRatio;
          break;
        case 'average':
          rho = (tokRatio + seqRatio) / 2;
          dTok = tokRatio / 2;
          dSeq = seqRatio / 2;
          break;
        case 'geometric_average':
          rho = Math.sqrt(tokRatio) * Math.sqrt(seqRatio);
          dTok = rho / 2;
          dSeq = rho / 2;
          break;
      }
      let pass = 1; // gradient factor through the clamp and the mask
      if (M !== null) {
        if (rho > M) pass = 0;
        rho = Math.min(rho, M);
      }
      if (spec.maskProbRatio) {
        if (!(rho > lo && rho < hi)) {
          rho = 0;
          pass = 0;
        }
      }
      const adv = s.advantages![i] - (tau !== null ? tau * delta[b][i] : 0);
      const clipped = Math.min(Math.max(rho, lo), hi);
      const newLp = newLogprobs[b][i];
      let l: number;
      let dNew: number; // dL/dnew_i directly (not through rho)
      let dRho: number; // dl/drho
      if (spec.ppo) {
        const a = rho * adv;
        const c = clipped * adv;
        l = -Math.min(a, c);
        const inside = rho >= lo && rho <= hi ? 1 : 0;
        dRho = a < c ? -adv : a > c ? -adv * inside : -adv / 2 - (adv / 2) * inside;
        dNew = 0;
      } else {
        l = -clipped * adv * newLp;
        dRho = 0;
        dNew = -clipped * adv;
      }
      loss += l * coef;
      const gRho = coef * dRho * pass;
      coefficients[b][i] -= coef * dNew + gRho * dTok;
      if (gRho * dSeq !== 0) groupGrad.set(g, (groupGrad.get(g) ?? 0) + gRho * dSeq);
    }
  });
  if (groupGrad.size) {
    seqs.forEach((s, b) => {
      const g = groupOf[b];
      const gg = groupGrad.get(g);
      if (!gg) return;
      const n = Math.max(groupCount.get(g) ?? 0, 1);
      for (let i = 0; i < s.tokens.length; i++) if (s.trainable[i]) coefficients[b][i] -= gg / n;
    });
  }
  return { loss, policyLoss: loss, coefficients, trainableTokens: trainable, maxRatioDeviation };
}

/**
 * The logged mean entropy of the step: SFT the mean over trainable tokens; RL as ART logs it,
 * sum_i H_i w_i m_i / (sum_i m_i + 1e-6). entropies[b][i]: entropy of the distribution that
 * predicted token i. Null when nothing is trainable.
 */
export function stepEntropy(seqs: readonly TrainingSequence[], entropies: readonly ArrayLike<number>[], spec: LossSpec): number | null {
  checkShapes(seqs, entropies, 'entropies');
  let num = 0;
  let den = 0;
  seqs.forEach((s, b) => {
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      const w = spec.kind === 'rl' && s.weights ? s.weights[i] : 1;
      num += entropies[b][i] * w;
      den += 1;
    }
  });
  if (den === 0) return null;
  return spec.kind === 'rl' ? num / (den + 1e-6) : num / den;
}
