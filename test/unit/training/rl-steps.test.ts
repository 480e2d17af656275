// RL job preparation: advantages, the zero-advantage drop, per-token weights and advantages
// normalised over the job, advantage_balance, packing into steps; numbers worked out by hand.
import { describe, expect, it } from 'vitest';
import { resolveRlSettings } from '../../../src/service/training/rl-config';
import { groupAdvantages, planRlSteps } from '../../../src/service/training/rl-steps';
import { bundledTokenizer, choice, ids } from './fixtures';

const chat = bundledTokenizer('tiny-chat');

function trajectory(answer: string, reward: number, extra: Record<string, unknown> = {}) {
  return { messages_and_choices: [{ role: 'user', content: 'What is 2 + 3?' }, choice(chat, answer)], reward, ...extra };
}

const plan = (groups: any[], config: Record<string, unknown> = {}, stepTokens?: number, seed = 'job-1') =>
  planRlSteps(groups, { settings: resolveRlSettings(config), model: chat, maxLength: 2048, stepTokens, seed });

const targets = (s: { trainable: Uint8Array }) => s.trainable.reduce((a, m) => a + m, 0);

describe('groupAdvantages', () => {
  it('centres on the group mean and divides by the population std + 1e-6', () => {
    const a = groupAdvantages([1, 0, 0, 1], true);
    expect(a[0]).toBeCloseTo(0.5 / (0.5 + 1e-6), 12);
    expect(a[1]).toBeCloseTo(-0.5 / (0.5 + 1e-6), 12);
    expect(groupAdvantages([3, 1], false)).toEqual([1, -1]);
    expect(groupAdvantages([2, 2, 2], true)).toEqual([0, 0, 0]);
  });
});

describe('planRlSteps', () => {
  it('drops zero-advantage trajectories and equal-reward groups', () => {
    const p = plan([
      { trajectories: [trajectory('5', 1), trajectory('6', 0), trajectory('7', 0.5)] },
      { trajectories: [trajectory('5', 1), trajectory('5', 1)] },
    ]);
    expect(p.numGroups).toBe(2);
    expect(p.numGroupsTrainable).toBe(1);
    expect(p.numTrajectories).toBe(5);
    expect(p.numTrajectoriesTrained).toBe(2); // the 0.5 equals its group mean
    expect(p.steps).toHaveLength(1);
    expect(p.steps[0].sequences).toHaveLength(2);
  });

  it('nothing trainable gives no steps', () => {
    expect(plan([{ trajectories: [trajectory('5', 1), trajectory('5', 1)] }]).steps).toEqual([]);
  });

  it('weights by 1/(target tokens) normalised over the job, and advantages by mean |A| w', () => {
    // A long answer (4 targets) with reward 1 against a short one (2 targets) with reward 0.
    const long = trajectory('123', 1);
    const short = trajectory('9', 0);
    const [step] = plan([{ trajectories: [long, short] }]).steps;
    const byLength = [...step.sequences].sort((a, b) => targets(b) - targets(a));
    const [n1, n2] = byLength.map(targets);
    expect([n1, n2]).toEqual([ids(chat, '123').length + 1, 2]);
    const w1 = (n1 + n2) / (2 * n1);
    const w2 = (n1 + n2) / (2 * n2);
    const at = (s: (typeof byLength)[0], arr: Float32Array) => arr[s.trainable.indexOf(1)];
    expect(at(byLength[0], byLength[0].weights!)).toBeCloseTo(w1, 5);
    expect(at(byLength[1], byLength[1].weights!)).toBeCloseTo(w2, 5);
    // mean(|A| w) over tokens = a, so the normalised advantages are +-1.
    expect(at(byLength[0], byLength[0].advantages!)).toBeCloseTo(1, 5);
    expect(at(byLength[1], byLength[1].advantages!)).toBeCloseTo(-1, 5);
    // Non-target positions carry nothing; old logprobs only on targets.
    expect(byLength[0].weights![0]).toBe(0);
    expect(Number.isNaN(byLength[0].oldLogprobs![0])).toBe(true);
    expect(byLength[0].oldLogprobs![byLength[0].trainable.indexOf(1)]).toBeCloseTo(-0.5, 6);
  });

  it('advantage_balance scales the negative side before normalising', () => {
    const [step] = plan([{ trajectories: [trajectory('5', 1), trajectory('6', 0)] }], { advantage_balance: 0.5 }).steps;
    const values = step.sequences.map((s) => s.advantages![s.trainable.indexOf(1)]).sort((a, b) => b - a);
    expect(values[0]).toBeCloseTo(1 / 0.75, 5);
    expect(values[1]).toBeCloseTo(-0.5 / 0.75, 5);
    const [onlyNeg] = plan([{ trajectories: [trajectory('5', 1), trajectory('6', 0)] }], { advantage_balance: -1 }).steps;
    const neg = onlyNeg.sequences.map((s) => s.advantages![s.trainable.indexOf(1)]).sort((a, b) => b - a);
    expect(neg[0]).toBe(0);
    expect(neg[1]).toBeCloseTo(-2, 5);
  });

  it("gives additional histories the trajectory's advantage and shared weight", () => {
    const t = trajectory('5', 1, {
      additional_histories: [{ messages_and_choices: [{ role: 'user', content: 'again' }, choice(chat, '77')] }],
    });
    const [step] = plan([{ trajectories: [t, trajectory('6', 0)] }]).steps;
    expect(step.sequences).toHaveLength(3);
    const positive = step.sequences.filter((s) => s.advantages![s.trainable.indexOf(1)] > 0);
    expect(positive).toHaveLength(2);
    const w = positive.map((s) => s.weights![s.trainable.indexOf(1)]);
    expect(w[0]).toBeCloseTo(w[1], 7);
    expect(step.numTrajectories).toBe(2);
  });

  it('packs sequences into steps within the token budget, deterministically per job', () => {
    const groups = Array.from({ length: 6 }, (_, g) => ({ trajectories: [trajectory(String(g), 1), trajectory(String(g + 1), 0)] }));
    const one = plan(groups, {}, 64);
    const len = one.steps[0].sequences[0].tokens.length; // every sequence here has the same length
    expect(one.steps.length).toBe(Math.ceil(12 / Math.floor(64 / len)));
    for (const s of one.steps) expect(s.sequences.reduce((n, q) => n + q.tokens.length, 0)).toBeLessThanOrEqual(64);
    expect(one.steps.reduce((n, s) => n + s.sequences.length, 0)).toBe(12);
    const again = plan(groups, {}, 64);
    expect(again.steps.map((s) => s.sequences.map((q) => [...q.tokens]))).toEqual(
      one.steps.map((s) => s.sequences.map((q) => [...q.tokens])),
    );
    // packed_sequence_length overrides the budget.
    expect(plan(groups, { packed_sequence_length: 2048 }, 64).steps).toHaveLength(1);
  });

  it("scales each step's learning rate by #trajectories^power", () => {
    const groups = [{ trajectories: [trajectory('5', 1), trajectory('6', 0), trajectory('7', 0)] }];
    expect(plan(groups, { learning_rate: 1e-3 }).steps[0].learningRate).toBe(1e-3);
    expect(plan(groups, { learning_rate: 1e-3, num_trajectories_learning_rate_multiplier_power: 1 }).steps[0].learningRate).toBeCloseTo(
      3e-3,
      12,
    );
  });
});
