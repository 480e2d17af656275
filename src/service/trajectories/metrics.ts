/**
 * The metrics a trajectory log computes, as ART computes them for one split (docs/reference/art-compat.md §6):
 * mean reward, exception rate, the mean of every trajectory metric, group metrics, the mean
 * within-group reward standard deviation (the GRPO signal), and data counters.
 *
 * Pure: no storage, no prefixes. The caller stores the result as "{split}/{metric}".
 * A mean over nothing is omitted rather than NaN, because JSON cannot carry NaN.
 */

export interface TrajectoryForMetrics {
  reward: number;
  metrics?: Record<string, number | boolean> | null;
}

export interface GroupForMetrics {
  trajectories: TrajectoryForMetrics[];
  exceptions?: unknown[] | null;
  metrics?: Record<string, number | boolean> | null;
}

/** Names computed here; a trajectory metric of the same name is ignored so they stay unambiguous. */
const BUILT_IN = new Set(['reward', 'exception_rate', 'reward_std_dev']);

function mean(xs: number[]): number | undefined {
  return xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Population standard deviation (divide by n), as GRPO's advantage normalisation uses. */
export function populationStd(xs: number[]): number {
  const m = mean(xs) ?? 0;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
}

function numeric(v: number | boolean): number | undefined {
  const x = typeof v === 'boolean' ? (v ? 1 : 0) : v;
  return Number.isFinite(x) ? x : undefined;
}

class MeanTable {
  private values = new Map<string, number[]>();
  add(key: string, v: number | boolean): void {
    const x = numeric(v);
    if (x === undefined) return;
    const list = this.values.get(key) ?? [];
    list.push(x);
    this.values.set(key, list);
  }
  into(out: Record<string, number>, prefix = ''): void {
    for (const [key, list] of this.values) out[prefix + key] = mean(list)!;
  }
}

export function trajectoryMetrics(groups: GroupForMetrics[]): Record<string, number> {
  const out: Record<string, number> = {};
  const rewards: number[] = [];
  const perTrajectory = new MeanTable();
  const perGroup = new MeanTable();
  const groupStds: number[] = [];
  let exceptions = 0;
  let trainableGroups = 0;

  for (const group of groups) {
    exceptions += group.exceptions?.length ?? 0;
    const groupRewards = group.trajectories.map((t) => t.reward);
    rewards.push(...groupRewards);
    for (const t of group.trajectories) {
      for (const [key, v] of Object.entries(t.metrics ?? {})) if (!BUILT_IN.has(key)) perTrajectory.add(key, v);
    }
    if (group.trajectories.length > 0) {
      for (const [key, v] of Object.entries(group.metrics ?? {})) perGroup.add(key, v);
    }
    if (groupRewards.length >= 2) {
      groupStds.push(populationStd(groupRewards));
      // A group whose rewards are all equal gives every trajectory advantage 0: nothing to learn.
      if (groupRewards.some((r) => r !== groupRewards[0])) trainableGroups += 1;
    }
  }

  const meanReward = mean(rewards);
  if (meanReward !== undefined) out.reward = meanReward;
  const attempts = rewards.length + exceptions;
  if (attempts > 0) out.exception_rate = exceptions / attempts;
  out.reward_std_dev = mean(groupStds) ?? 0;
  perTrajectory.into(out);
  perGroup.into(out, 'group_metric_');
  out['data/step_num_trajectories'] = attempts;
  out['data/step_num_groups_submitted'] = groups.length;
  out['data/step_num_groups_trainable'] = trainableGroups;
  return out;
}

/** "{split}/{metric}" keys, as checkpoint metrics and the run history store them. */
export function prefixMetrics(split: string, metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [`${split}/${k}`, v]));
}
