// Chart data: series aligned for uPlot, a run history turned into one chart per metric.
import { describe, expect, it } from 'vitest';
import { alignSeries, runCharts } from '../../../src/ui/chart-data';

describe('alignSeries', () => {
  it('aligns series on the union of their x values, with gaps as null', () => {
    expect(
      alignSeries([
        {
          label: 'a',
          points: [
            [2, 0.5],
            [0, 1],
          ],
        },
        {
          label: 'b',
          points: [
            [1, 3],
            [2, Number.NaN],
          ],
        },
      ]),
    ).toEqual([
      [0, 1, 2],
      [1, null, 0.5],
      [null, 3, null],
    ]);
  });
});

describe('runCharts', () => {
  it('makes one chart per metric with one series per split, usual metrics first', () => {
    const charts = runCharts({
      model_id: 'm',
      history: [
        { step: 1, split: 'train', metrics: { 'train/reward': 0.5, 'train/zeta': 2, 'train/exception_rate': 0 }, logged_at: null },
        { step: 0, split: 'train', metrics: { 'train/reward': 0.25, done: true }, logged_at: null },
        { step: 1, split: 'val', metrics: { reward: 0.75, reward_std_dev: 0.1 }, logged_at: null },
      ],
    });
    expect(charts.map((c) => c.metric)).toEqual(['reward', 'reward_std_dev', 'exception_rate', 'done', 'zeta']);
    expect(charts[0].series).toEqual([
      {
        label: 'train',
        points: [
          [0, 0.25],
          [1, 0.5],
        ],
      },
      { label: 'val', points: [[1, 0.75]] },
    ]);
    expect(charts[3].series).toEqual([{ label: 'train', points: [[0, 1]] }]);
  });
});
