/**
 * The data behind the charts, as pure functions: uPlot's aligned layout for several series, and
 * a run record's history turned into charts: one chart per metric name, one series per split,
 * points at each logged step. `{split}/` prefixes are stripped so `train/reward` and
 * `val/reward` share the "reward" chart. The usual metrics (reward, its std dev, exception rate)
 * come first.
 *
 * Not here: drawing (line-chart.ts).
 */
import type { RunRecord } from './types';

export interface ChartSeries {
  label: string;
  /** [x, y] pairs; x ascending is not required (they are sorted). */
  points: readonly (readonly [number, number])[];
}

/** Aligns several series on the union of their x values (uPlot's data layout); gaps are null. */
export function alignSeries(series: readonly ChartSeries[]): (number | null)[][] {
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const col: (number | null)[] = xs.map(() => null);
    for (const [x, y] of s.points) col[index.get(x)!] = Number.isFinite(y) ? y : null;
    return col;
  });
  return [xs, ...ys];
}

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
