/**
 * Turns a run record's history into charts: one chart per metric name, one series per split,
 * points at each logged step. `{split}/` prefixes are stripped so `train/reward` and
 * `val/reward` share the "reward" chart. The usual metrics (reward, its std dev, exception rate)
 * come first. Pure functions.
 */
import type { ChartSeries } from './line-chart';
import type { RunRecord } from './types';

const FIRST = ['reward', 'reward_std_dev', 'exception_rate'];

export interface MetricChart {
  metric: string;
  series: ChartSeries[];
}

export function runCharts(run: RunRecord): MetricChart[] {
  const byMetric = new Map<string, Map<string, [number, number][]>>();
  for (const entry of run.history) {
    for (const [rawKey, value] of Object.entries(entry.metrics)) {
      const v = typeof value === 'boolean' ? Number(value) : value;
      if (!Number.isFinite(v)) continue;
      const key = rawKey.startsWith(`${entry.split}/`) ? rawKey.slice(entry.split.length + 1) : rawKey;
      const splits = byMetric.get(key) ?? new Map<string, [number, number][]>();
      byMetric.set(key, splits);
      const points = splits.get(entry.split) ?? [];
      splits.set(entry.split, points);
      points.push([entry.step, v]);
    }
  }
  const rank = (m: string) => (FIRST.includes(m) ? FIRST.indexOf(m) : FIRST.length);
  return [...byMetric]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([metric, splits]) => ({
      metric,
      series: [...splits].map(([split, points]) => ({ label: split, points: points.sort((a, b) => a[0] - b[0]) })),
    }));
}
