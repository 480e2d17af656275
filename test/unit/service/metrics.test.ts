// Trajectory-log metrics (docs/reference/art-compat.md §6), checked against values worked out by hand.
import { describe, expect, it } from 'vitest';
import { populationStd, prefixMetrics, trajectoryMetrics } from '../../../src/service/trajectories/metrics';

const t = (reward: number, metrics?: Record<string, number | boolean>) => ({ reward, metrics });

describe('trajectoryMetrics', () => {
  it('averages rewards over every trajectory of every group', () => {
    const m = trajectoryMetrics([{ trajectories: [t(1), t(0)] }, { trajectories: [t(0.5)] }]);
    expect(m.reward).toBeCloseTo(0.5, 12);
  });

  it('counts exceptions against trajectories plus exceptions', () => {
    const m = trajectoryMetrics([
      { trajectories: [t(1), t(1), t(1)], exceptions: [{ type: 'E', message: 'boom' }] },
      { trajectories: [], exceptions: [] },
    ]);
    expect(m.exception_rate).toBeCloseTo(0.25, 12);
    expect(m['data/step_num_trajectories']).toBe(4);
    expect(m['data/step_num_groups_submitted']).toBe(2);
  });

  it('reward_std_dev is the mean of population stds of groups with two or more trajectories', () => {
    // Group A rewards 0, 2: std 1. Group B rewards 1, 1, 4: mean 2, var (1+1+4)/3 = 2, std sqrt 2.
    // Group C has one trajectory and does not count.
    const m = trajectoryMetrics([{ trajectories: [t(0), t(2)] }, { trajectories: [t(1), t(1), t(4)] }, { trajectories: [t(7)] }]);
    expect(m.reward_std_dev).toBeCloseTo((1 + Math.SQRT2) / 2, 12);
    expect(m['data/step_num_groups_trainable']).toBe(2);
  });

  it('reward_std_dev is 0 and groups of equal rewards are not trainable', () => {
    const m = trajectoryMetrics([{ trajectories: [t(3), t(3)] }, { trajectories: [t(1)] }]);
    expect(m.reward_std_dev).toBe(0);
    expect(m['data/step_num_groups_trainable']).toBe(0);
  });

  it('averages each trajectory metric over the trajectories that have it, booleans as 0/1', () => {
    const m = trajectoryMetrics([
      { trajectories: [t(0, { correct: true, turns: 3 }), t(0, { correct: false }), t(0, { correct: true, turns: 5 })] },
    ]);
    expect(m.correct).toBeCloseTo(2 / 3, 12);
    expect(m.turns).toBe(4);
  });

  it('averages group metrics over groups that have trajectories, as group_metric_<k>', () => {
    const m = trajectoryMetrics([
      { trajectories: [t(1)], metrics: { difficulty: 2 } },
      { trajectories: [t(1)], metrics: { difficulty: 4 } },
      { trajectories: [], metrics: { difficulty: 100 } },
    ]);
    expect(m.group_metric_difficulty).toBe(3);
  });

  it('omits means over nothing instead of producing NaN', () => {
    const m = trajectoryMetrics([]);
    expect(m).not.toHaveProperty('reward');
    expect(m).not.toHaveProperty('exception_rate');
    expect(Object.values(m).every(Number.isFinite)).toBe(true);
  });

  it('keeps built-in names unambiguous when a trajectory metric reuses them', () => {
    const m = trajectoryMetrics([{ trajectories: [t(1, { reward: 100 }), t(0, { reward: 100 })] }]);
    expect(m.reward).toBe(0.5);
  });

  it('prefixes every key with the split', () => {
    expect(prefixMetrics('val', { reward: 1, 'data/x': 2 })).toEqual({ 'val/reward': 1, 'val/data/x': 2 });
  });

  it('populationStd divides by n', () => {
    expect(populationStd([2, 4, 4, 4, 5, 5, 7, 9])).toBe(2);
  });
});
