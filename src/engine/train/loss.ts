/**
 * The per-token loss coefficients of one optimizer step: everything the trainer's backward needs
 * to know about the loss. Every loss Hearth trains with is, as a function of the policy's logprobs
 * new_i of the step's tokens, L(new); the logits backward is then
 *   dlogits_i = c_i (softmax - onehot(token_i)),  c_i = -dL/dnew_i
 * (reference/cross-entropy.ts). This file computes L and c_i on the CPU in f64, between the
 * forward submission that produced new_i and the backward submission that consumes c_i.
 *
 * - SFT (docs/reference/art-compat.md §4): L = -sum_i m_i w_i new_i / sum_i m_i, the token mean of the
 *   cross-entropy over the step's trainable tokens (w = 1 unless the service gives weights).
 * - RL (docs/reference/art-compat.md §3.4, ART's src/art/loss.py term by term): delta_i = new_i - old_i (old
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
import type { ImportanceSamplingLevel, LossSpec, TrainingSequence } from './types';

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
    if (s.trainable.length !== s.tokens.length)
      throw new Error(`loss: sequence ${b} has ${s.trainable.length} mask entries for ${s.tokens.length} tokens`);
    if (values[b].length !== s.tokens.length)
      throw new Error(`loss: sequence ${b} has ${values[b].length} ${what} for ${s.tokens.length} tokens`);
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

/** A trainable token's importance ratio rho, with d rho / d delta_i (its token part) and d rho / d mu_g (its sequence part). */
interface Ratio {
  rho: number;
  dTok: number;
  dSeq: number;
}

/** rho per importance_sampling_level, from the token ratio exp(delta_i) and the group's sequence ratio exp(mu_g). */
const IMPORTANCE_LEVELS: Record<ImportanceSamplingLevel, (tokRatio: number, seqRatio: number) => Ratio> = {
  token: (tokRatio) => ({ rho: tokRatio, dTok: tokRatio, dSeq: 0 }),
  sequence: (_, seqRatio) => ({ rho: seqRatio, dTok: 0, dSeq: seqRatio }),
  average: (tokRatio, seqRatio) => ({ rho: (tokRatio + seqRatio) / 2, dTok: tokRatio / 2, dSeq: seqRatio / 2 }),
  geometric_average: (tokRatio, seqRatio) => {
    const rho = Math.sqrt(tokRatio) * Math.sqrt(seqRatio);
    return { rho, dTok: rho / 2, dSeq: rho / 2 };
  },
};

/** One token's inputs to the policy loss: rho after its limits, clip(rho, lo, hi), the advantage, new_i. */
interface PolicyInput {
  rho: number;
  clipped: number;
  adv: number;
  newLp: number;
  lo: number;
  hi: number;
}

/** l_i, dl/drho and dl/dnew_i taken directly (not through rho). */
interface PolicyTerm {
  l: number;
  dRho: number;
  dNew: number;
}

/** The policy losses: PPO's clipped objective, or CISPO's (the clipped ratio as a stopped weight). */
const POLICY_LOSSES: Record<'ppo' | 'cispo', (t: PolicyInput) => PolicyTerm> = {
  ppo: ({ rho, clipped, adv, lo, hi }) => {
    const a = rho * adv;
    const c = clipped * adv;
    const inside = rho >= lo && rho <= hi ? 1 : 0;
    return { l: -Math.min(a, c), dRho: a < c ? -adv : a > c ? -adv * inside : -adv / 2 - (adv / 2) * inside, dNew: 0 };
  },
  cispo: ({ clipped, adv, newLp }) => ({ l: -clipped * adv * newLp, dRho: 0, dNew: -clipped * adv }),
};

/**
 * delta_i = new_i - old_i on every trainable token (0 where old is unknown), the number of trainable
 * tokens, and max |exp(delta_i) - 1| over the tokens with an old logprob (null when none has one).
 */
function logRatios(
  seqs: readonly TrainingSequence[],
  newLogprobs: readonly ArrayLike<number>[],
): { delta: Float64Array[]; trainable: number; maxRatioDeviation: number | null } {
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
  return { delta, trainable, maxRatioDeviation };
}

/** The importance groups of a step: each sequence's group, and per group the sum and count of delta over its trainable tokens. */
function importanceGroups(seqs: readonly TrainingSequence[], delta: readonly Float64Array[]) {
  const groupOf = seqs.map((s, b) => s.importanceGroup ?? b);
  const sum = new Map<number, number>();
  const count = new Map<number, number>();
  seqs.forEach((s, b) => {
    const g = groupOf[b];
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      sum.set(g, (sum.get(g) ?? 0) + delta[b][i]);
      count.set(g, (count.get(g) ?? 0) + 1);
    }
  });
  return {
    groupOf,
    /** Trainable tokens of group g (at least 1). */
    size: (g: number) => Math.max(count.get(g) ?? 0, 1),
    /** Sequence-level ratio: exp of the mean of delta over the group's trainable tokens. */
    ratio: (g: number) => Math.exp((sum.get(g) ?? 0) / Math.max(count.get(g) ?? 0, 1)),
  };
}

/**
 * rho <- min(rho, M) when M is set, then rho <- 0 outside (lo, hi) with mask_prob_ratio; `pass` is
 * the gradient factor through both (0 where the clamp or the mask cut rho off).
 */
function limitRatio(rho: number, M: number | null, maskProbRatio: boolean, lo: number, hi: number): { rho: number; pass: number } {
  let pass = 1;
  if (M !== null) {
    if (rho > M) pass = 0;
    rho = Math.min(rho, M);
  }
  if (maskProbRatio && !(rho > lo && rho < hi)) {
    rho = 0;
    pass = 0;
  }
  return { rho, pass };
}

function rlLoss(seqs: readonly TrainingSequence[], newLogprobs: readonly ArrayLike<number>[], spec: RlSpec): StepLoss {
  const lo = 1 - spec.epsilon;
  const hi = 1 + spec.epsilonHigh;
  const importance = IMPORTANCE_LEVELS[spec.importanceSamplingLevel];
  const policy = POLICY_LOSSES[spec.ppo ? 'ppo' : 'cispo'];
  // ART tests these with Python truthiness: 0 and null both mean "off".
  const M = spec.maxNegativeAdvantageImportanceSamplingWeight || null;
  const tau = spec.kimiK2Tau || null;

  const { delta, trainable, maxRatioDeviation } = logRatios(seqs, newLogprobs);
  const D = trainable + 1e-6;
  const groups = importanceGroups(seqs, delta);

  let loss = 0;
  const coefficients = seqs.map((s) => new Float64Array(s.tokens.length));
  // dL/d(sequence ratio part) summed over each group's tokens, spread over the group afterwards.
  const groupGrad = new Map<number, number>();
  seqs.forEach((s, b) => {
    const g = groups.groupOf[b];
    for (let i = 0; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      const w = s.weights ? s.weights[i] : 1;
      const coef = w / D; // dL/dl_i
      const { rho: raw, dTok, dSeq } = importance(Math.exp(delta[b][i]), spec.importanceSamplingLevel === 'token' ? 1 : groups.ratio(g));
      const { rho, pass } = limitRatio(raw, M, spec.maskProbRatio, lo, hi);
      const adv = s.advantages![i] - (tau !== null ? tau * delta[b][i] : 0);
      const { l, dRho, dNew } = policy({ rho, clipped: Math.min(Math.max(rho, lo), hi), adv, newLp: newLogprobs[b][i], lo, hi });
      loss += l * coef;
      const gRho = coef * dRho * pass;
      coefficients[b][i] -= coef * dNew + gRho * dTok;
      if (gRho * dSeq !== 0) groupGrad.set(g, (groupGrad.get(g) ?? 0) + gRho * dSeq);
    }
  });
  seqs.forEach((s, b) => {
    const g = groups.groupOf[b];
    const gg = groupGrad.get(g);
    if (!gg) return;
    const n = groups.size(g);
    for (let i = 0; i < s.tokens.length; i++) if (s.trainable[i]) coefficients[b][i] -= gg / n;
  });
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
