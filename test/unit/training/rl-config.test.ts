// experimental_config -> the engine's loss settings: nulls are defaults, aliases resolve, and
// settings Hearth does not implement are refused with a 422 naming them.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/service/errors';
import { withoutNulls } from '../../../src/service/training/job-input';
import { resolveRlSettings } from '../../../src/service/training/rl-config';

describe('resolveRlSettings', () => {
  it("fills ART's defaults when every key is null (as ART sends them)", () => {
    const s = resolveRlSettings(withoutNulls({ epsilon: null, ppo: null, learning_rate: null, scale_rewards: null, kimi_k2_tau: null }));
    expect(s.loss).toEqual({
      kind: 'rl',
      ppo: false,
      epsilon: 1,
      epsilonHigh: 4,
      importanceSamplingLevel: 'token',
      maskProbRatio: false,
      kimiK2Tau: null,
      maxNegativeAdvantageImportanceSamplingWeight: null,
    });
    expect(s.learningRate).toBe(5e-6);
    expect(s.scaleRewards).toBe(true);
    expect(s.advantageBalance).toBe(0);
    expect(s.precalculateLogprobs).toBe(false);
  });

  it('PPO clips at 0.2 symmetric unless told otherwise; user values win', () => {
    expect(resolveRlSettings({ ppo: true }).loss).toMatchObject({ ppo: true, epsilon: 0.2, epsilonHigh: 0.2 });
    expect(resolveRlSettings({ ppo: true, epsilon: 0.1 }).loss).toMatchObject({ epsilon: 0.1, epsilonHigh: 0.1 });
    expect(resolveRlSettings({ epsilon: 0.5, epsilon_high: 0.7 }).loss).toMatchObject({ ppo: false, epsilon: 0.5, epsilonHigh: 0.7 });
    expect(resolveRlSettings({ loss_fn: 'ppo' }).loss.ppo).toBe(true);
    expect(
      resolveRlSettings({
        importance_sampling_level: 'geometric_average',
        mask_prob_ratio: true,
        max_negative_advantage_importance_sampling_weight: 2,
      }).loss,
    ).toMatchObject({ importanceSamplingLevel: 'geometric_average', maskProbRatio: true, maxNegativeAdvantageImportanceSamplingWeight: 2 });
  });

  it('accepts modelfamily_k2_tau as kimi_k2_tau', () => {
    expect(resolveRlSettings({ modelfamily_k2_tau: 0.3 }).loss.kimiK2Tau).toBe(0.3);
    expect(resolveRlSettings({ kimi_k2_tau: 0.3, modelfamily_k2_tau: 0.3 }).loss.kimiK2Tau).toBe(0.3);
    expect(() => resolveRlSettings({ kimi_k2_tau: 0.3, modelfamily_k2_tau: 0.4 })).toThrow(InvalidInputError);
  });

  it('normalize_advantages false turns scale_rewards off', () => {
    expect(resolveRlSettings({ normalize_advantages: false }).scaleRewards).toBe(false);
    expect(resolveRlSettings({ scale_rewards: false }).scaleRewards).toBe(false);
  });

  it('refuses settings it cannot honour, naming the key, and accepts their off values', () => {
    for (const [key, value] of [
      ['kl_penalty_coef', 0.1],
      ['kl_ref_adapter_path', '/x'],
      ['truncated_importance_sampling', 2],
      ['scale_learning_rate_by_reward_std_dev', true],
      ['plot_tensors', true],
    ] as const) {
      try {
        resolveRlSettings({ [key]: value });
        expect.unreachable(`${key} should be refused`);
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidInputError);
        expect((err as InvalidInputError).loc).toEqual(['body', 'experimental_config', key]);
        expect((err as Error).message).toContain(key);
      }
    }
    expect(() =>
      resolveRlSettings({ kl_penalty_coef: 0, plot_tensors: false, scale_learning_rate_by_reward_std_dev: false }),
    ).not.toThrow();
    expect(() => resolveRlSettings({ ppo: false, loss_fn: 'ppo' })).toThrow(/contradicts/);
  });
});
