import { describe, expect, it } from 'vitest';
import { Rng } from '../../../src/engine/tensor/random';
import { stepEntropy, stepLoss } from '../../../src/engine/train/loss';
import type { ImportanceSamplingLevel, LossSpec, TrainingSequence } from '../../../src/engine/train/types';

/**
 * ART's loss (OpenPipe/ART src/art/loss.py), transcribed line by line over the flattened step, with
 * `detach()` made explicit: `free` is the logprob tensor the gradient flows through, `frozen` its
 * detached value. Group ids are 1-based and multiplied by the mask, as ART's packing does.
 */
function artLoss(
  free: Float64Array,
  frozen: Float64Array,
  old: Float64Array,
  adv: Float64Array,
  mask: Float64Array,
  weights: Float64Array,
  groupIds: Int32Array,
  spec: Extract<LossSpec, { kind: 'rl' }>,
): number {
  const n = free.length;
  const ratio = (lp: Float64Array) => {
    const oldEff = old.map((o, i) => (Number.isNaN(o) ? frozen[i] : o));
    const diff = lp.map((v, i) => v - oldEff[i]);
    let prob = diff.map(Math.exp);
    if (spec.importanceSamplingLevel !== 'token') {
      const by = groupIds.map((g, i) => g * mask[i]);
      const sums = new Map<number, number>();
      const counts = new Map<number, number>();
      by.forEach((g, i) => {
        sums.set(g, (sums.get(g) ?? 0) + diff[i]);
        counts.set(g, (counts.get(g) ?? 0) + 1);
      });
      const seq = Float64Array.from(by, (g) => Math.exp(sums.get(g)! / counts.get(g)!));
      const tok = prob;
      if (spec.importanceSamplingLevel === 'sequence') prob = seq;
      else if (spec.importanceSamplingLevel === 'average') prob = tok.map((t, i) => (t + seq[i]) / 2);
      else prob = tok.map((t, i) => Math.sqrt(t) * Math.sqrt(seq[i]));
    }
    const M = spec.maxNegativeAdvantageImportanceSamplingWeight;
    if (M) prob = prob.map((p) => Math.min(p, M));
    if (spec.maskProbRatio) prob = prob.map((p) => (p > 1 - spec.epsilon && p < 1 + spec.epsilonHigh ? p : 0));
    return { prob, diff };
  };
  const live = ratio(free);
  const dead = ratio(frozen);
  const advantages = Float64Array.from(adv);
  if (spec.kimiK2Tau) for (let i = 0; i < n; i++) advantages[i] -= spec.kimiK2Tau * dead.diff[i];
  const clip = (p: number) => Math.min(Math.max(p, 1 - spec.epsilon), 1 + spec.epsilonHigh);
  let sum = 0;
  let maskSum = 0;
  for (let i = 0; i < n; i++) {
    const l = spec.ppo
      ? -Math.min(live.prob[i] * advantages[i], clip(live.prob[i]) * advantages[i])
      : -(clip(dead.prob[i]) * advantages[i] * free[i]);
    sum += l * weights[i] * mask[i];
    maskSum += mask[i];
  }
  return sum / (maskSum + 1e-6);
}

interface Case {
  seqs: TrainingSequence[];
  newLp: Float64Array[];
}

/** Sequences of different lengths, some sampler logprobs unknown, two histories sharing a group. */
function makeCase(seed: number, opts: { sharedGroup?: boolean } = {}): Case {
  const rng = new Rng(seed);
  const lengths = [7, 12, 4, 9];
  const seqs: TrainingSequence[] = [];
  const newLp: Float64Array[] = [];
  lengths.forEach((T, b) => {
    const trainable = new Uint8Array(T);
    const oldLogprobs = new Float32Array(T).fill(NaN);
    const advantages = new Float32Array(T);
    const weights = new Float32Array(T);
    const lp = new Float64Array(T).fill(NaN);
    const adv = rng.normal();
    const w = 0.5 + rng.uniform();
    for (let i = 1; i < T; i++) {
      lp[i] = -0.2 - 2 * rng.uniform();
      trainable[i] = i >= 2 && rng.uniform() < 0.8 ? 1 : 0;
      if (trainable[i] && rng.uniform() < 0.85) oldLogprobs[i] = lp[i] + 0.6 * (rng.uniform() - 0.5);
      advantages[i] = adv;
      weights[i] = w;
    }
    seqs.push({
      tokens: Uint32Array.from({ length: T }, (_, i) => (i * 7 + b) % 50),
      trainable,
      oldLogprobs,
      advantages,
      weights,
      importanceGroup: opts.sharedGroup && b === 3 ? 1 : b,
    });
    newLp.push(lp);
  });
  return { seqs, newLp };
}

/** Flattens a case into ART's per-token arrays (group ids 1-based). */
function flatten(c: Case) {
  const cat = (f: (s: TrainingSequence, b: number) => ArrayLike<number>) =>
    Float64Array.from(c.seqs.flatMap((s, b) => Array.from(f(s, b))));
  return {
    lp: cat((_, b) => c.newLp[b]).map((v) => (Number.isNaN(v) ? 0 : v)),
    old: cat((s) => s.oldLogprobs!),
    adv: cat((s) => s.advantages!),
    mask: cat((s) => s.trainable),
    weights: cat((s) => s.weights!),
    groups: Int32Array.from(c.seqs.flatMap((s, b) => Array.from({ length: s.tokens.length }, () => (s.importanceGroup ?? b) + 1))),
  };
}

function rl(over: Partial<Extract<LossSpec, { kind: 'rl' }>>): Extract<LossSpec, { kind: 'rl' }> {
  return {
    kind: 'rl',
    ppo: false,
    epsilon: 1,
    epsilonHigh: 4,
    importanceSamplingLevel: 'token',
    maskProbRatio: false,
    kimiK2Tau: null,
    maxNegativeAdvantageImportanceSamplingWeight: null,
    ...over,
  };
}

/** Loss value and coefficients against ART's transcription: value exactly, c = -dL/dnew by central differences. */
function checkAgainstArt(c: Case, spec: Extract<LossSpec, { kind: 'rl' }>): void {
  const f = flatten(c);
  const got = stepLoss(c.seqs, c.newLp, spec);
  const want = artLoss(f.lp, f.lp, f.old, f.adv, f.mask, f.weights, f.groups, spec);
  expect(got.loss).toBeCloseTo(want, 12);
  const flatC = Float64Array.from(got.coefficients.flatMap((a) => Array.from(a)));
  const h = 1e-6;
  for (let i = 0; i < f.lp.length; i++) {
    const plus = Float64Array.from(f.lp);
    const minus = Float64Array.from(f.lp);
    plus[i] += h;
    minus[i] -= h;
    const fd =
      -(
        artLoss(plus, f.lp, f.old, f.adv, f.mask, f.weights, f.groups, spec) -
        artLoss(minus, f.lp, f.old, f.adv, f.mask, f.weights, f.groups, spec)
      ) /
      (2 * h);
    if (Math.abs(flatC[i] - fd) > 1e-7 + 1e-6 * Math.abs(fd)) {
      throw new Error(`token ${i}: coefficient ${flatC[i]}, finite difference ${fd} (${JSON.stringify(spec)})`);
    }
  }
}

describe('RL loss coefficients against ART loss.py by finite differences', () => {
  const levels: ImportanceSamplingLevel[] = ['token', 'sequence', 'average', 'geometric_average'];
  for (const ppo of [false, true]) {
    for (const level of levels) {
      it(`${ppo ? 'PPO' : 'CISPO'}, ${level} importance sampling`, () => {
        const spec = rl(ppo ? { ppo, epsilon: 0.2, epsilonHigh: 0.2, importanceSamplingLevel: level } : { importanceSamplingLevel: level });
        checkAgainstArt(makeCase(11), spec);
        checkAgainstArt(makeCase(12, { sharedGroup: true }), spec);
      });
    }
  }
  it('mask_prob_ratio, kimi_k2_tau and the max negative-advantage IS weight, alone and together', () => {
    for (const ppo of [false, true]) {
      const eps = ppo ? { epsilon: 0.15, epsilonHigh: 0.25 } : { epsilon: 0.2, epsilonHigh: 0.3 };
      for (const level of ['token', 'geometric_average'] as const) {
        checkAgainstArt(makeCase(21), rl({ ppo, ...eps, importanceSamplingLevel: level, maskProbRatio: true }));
        checkAgainstArt(makeCase(22), rl({ ppo, ...eps, importanceSamplingLevel: level, kimiK2Tau: 0.3 }));
        checkAgainstArt(
          makeCase(23),
          rl({ ppo, ...eps, importanceSamplingLevel: level, maxNegativeAdvantageImportanceSamplingWeight: 1.05 }),
        );
        checkAgainstArt(
          makeCase(24, { sharedGroup: true }),
          rl({
            ppo,
            ...eps,
            importanceSamplingLevel: level,
            maskProbRatio: true,
            kimiK2Tau: 0.5,
            maxNegativeAdvantageImportanceSamplingWeight: 1.1,
          }),
        );
      }
    }
  });
  it('a masked ratio and a clamped ratio really cut tokens out of the gradient', () => {
    const c = makeCase(31);
    const masked = stepLoss(c.seqs, c.newLp, rl({ ppo: true, epsilon: 0.01, epsilonHigh: 0.01, maskProbRatio: true }));
    const open = stepLoss(c.seqs, c.newLp, rl({ ppo: true, epsilon: 0.01, epsilonHigh: 0.01 }));
    const zeros = (r: typeof masked) => r.coefficients.flatMap((a) => Array.from(a)).filter((v) => v === 0).length;
    expect(zeros(masked)).toBeGreaterThanOrEqual(zeros(open));
    const clamped = stepLoss(c.seqs, c.newLp, rl({ maxNegativeAdvantageImportanceSamplingWeight: 0.5 }));
    // CISPO reads the clamped ratio as its weight: every coefficient shrinks in magnitude.
    const base = stepLoss(c.seqs, c.newLp, rl({}));
    const sumAbs = (r: typeof base) => r.coefficients.flatMap((a) => Array.from(a)).reduce((s, v) => s + Math.abs(v), 0);
    expect(sumAbs(clamped)).toBeLessThan(sumAbs(base));
  });
  it('tokens without a sampler logprob have ratio 1 but still get a gradient', () => {
    const c = makeCase(41);
    for (const s of c.seqs) s.oldLogprobs!.fill(NaN);
    const r = stepLoss(c.seqs, c.newLp, rl({ ppo: true, epsilon: 0.2, epsilonHigh: 0.2 }));
    // PPO at ratio 1: dl/dnew = -A, so c_i = A_i w_i / (sum m + 1e-6).
    const D = r.trainableTokens + 1e-6;
    c.seqs.forEach((s, b) => {
      for (let i = 0; i < s.tokens.length; i++) {
        expect(r.coefficients[b][i]).toBeCloseTo(s.trainable[i] ? (s.advantages![i] * s.weights![i]) / D : 0, 12);
      }
    });
  });
});

describe('RL max ratio deviation (issue 16)', () => {
  it('is max |exp(new - old) - 1| over trained tokens with a sampler logprob, null with none', () => {
    const c = makeCase(51);
    const f = flatten(c);
    let want = 0;
    for (let i = 0; i < f.lp.length; i++)
      if (f.mask[i] && !Number.isNaN(f.old[i])) want = Math.max(want, Math.abs(Math.exp(f.lp[i] - f.old[i]) - 1));
    expect(want).toBeGreaterThan(0);
    expect(stepLoss(c.seqs, c.newLp, rl({ ppo: true })).maxRatioDeviation).toBeCloseTo(want, 12);
    for (const s of c.seqs) s.oldLogprobs!.fill(NaN);
    expect(stepLoss(c.seqs, c.newLp, rl({ ppo: true })).maxRatioDeviation).toBeNull();
    expect(stepLoss(c.seqs, c.newLp, { kind: 'sft' }).maxRatioDeviation).toBeNull();
  });
});

describe('SFT loss', () => {
  it('is the token mean of the cross-entropy over the trainable tokens, with c = 1 / #trainable', () => {
    const c = makeCase(51);
    for (const s of c.seqs) {
      delete s.weights;
      delete s.advantages;
      delete s.oldLogprobs;
    }
    const r = stepLoss(c.seqs, c.newLp, { kind: 'sft' });
    let n = 0;
    let ce = 0;
    c.seqs.forEach((s, b) => {
      for (let i = 0; i < s.tokens.length; i++) {
        if (s.trainable[i]) {
          n++;
          ce -= c.newLp[b][i];
        }
      }
    });
    expect(r.trainableTokens).toBe(n);
    expect(r.loss).toBeCloseTo(ce / n, 12);
    expect(r.policyLoss).toBeNull();
    c.seqs.forEach((s, b) => s.trainable.forEach((m, i) => expect(r.coefficients[b][i]).toBeCloseTo(m ? 1 / n : 0, 15)));
    // Finite differences of the loss value itself (no stop-gradient in SFT).
    const h = 1e-6;
    const lp = c.newLp.map((a) => Float64Array.from(a));
    lp[1][5] += h;
    const up = stepLoss(c.seqs, lp, { kind: 'sft' }).loss;
    lp[1][5] -= 2 * h;
    const down = stepLoss(c.seqs, lp, { kind: 'sft' }).loss;
    expect(-(up - down) / (2 * h)).toBeCloseTo(r.coefficients[1][5], 8);
  });
  it('a step with nothing trainable has zero loss and zero coefficients', () => {
    const seqs: TrainingSequence[] = [{ tokens: Uint32Array.of(1, 2, 3), trainable: new Uint8Array(3) }];
    const r = stepLoss(seqs, [Float64Array.of(NaN, -1, -2)], { kind: 'sft' });
    expect(r.loss).toBe(0);
    expect(Array.from(r.coefficients[0])).toEqual([0, 0, 0]);
  });
  it('refuses a trainable first token and mismatched lengths', () => {
    const bad: TrainingSequence[] = [{ tokens: Uint32Array.of(1, 2), trainable: Uint8Array.of(1, 1) }];
    expect(() => stepLoss(bad, [Float64Array.of(NaN, -1)], { kind: 'sft' })).toThrow(/token 0 trainable/);
    const ok: TrainingSequence[] = [{ tokens: Uint32Array.of(1, 2), trainable: Uint8Array.of(0, 1) }];
    expect(() => stepLoss(ok, [Float64Array.of(NaN)], { kind: 'sft' })).toThrow(/1 logprobs for 2 tokens/);
  });
});

describe('step entropy', () => {
  it('SFT averages over trainable tokens; RL weights as ART logs it', () => {
    const c = makeCase(61);
    const H = c.seqs.map((s) => Float64Array.from({ length: s.tokens.length }, (_, i) => 1 + i / 10));
    let n = 0;
    let plain = 0;
    let weighted = 0;
    c.seqs.forEach((s, b) => {
      for (let i = 0; i < s.tokens.length; i++) {
        if (!s.trainable[i]) continue;
        n++;
        plain += H[b][i];
        weighted += H[b][i] * s.weights![i];
      }
    });
    expect(stepEntropy(c.seqs, H, { kind: 'sft' })).toBeCloseTo(plain / n, 12);
    expect(stepEntropy(c.seqs, H, rl({}))).toBeCloseTo(weighted / (n + 1e-6), 12);
  });
});
