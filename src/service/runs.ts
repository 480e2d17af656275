/**
 * Reading a model's experiment record for the Runs view: the metrics history by step and split
 * (GET /v1/preview/models/{id}/run) and the logged trajectory groups one by one
 * (GET /v1/preview/models/{id}/trajectories).
 *
 * The run history stores each /log call's metrics as "{split}/{metric}" keys (the form the
 * checkpoint metrics and ART's W&B history use); split names cannot contain "/", so the split is
 * everything before the first "/" and the metric name (which may contain "/", e.g.
 * "data/step_num_trajectories") the rest.
 *
 * Training metrics join the history too, as split "training": for each completed job, the mean
 * of its `gradient_step` events' numbers (loss, policy_loss, grad_norm, learning_rate,
 * tokens_per_second, ...) and `gradient_steps`, at the step of the checkpoint the job produced.
 *
 * Not here: writing logs (trajectories/log.ts), computing metrics (trajectories/metrics.ts).
 */
import type { Page } from '../store/page';
import type { JobEventRecord, RunHistoryEntry } from '../store/schema';
import { pageTrajectoryGroups, runHistory } from '../store/trajectory-logs';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { requireModel } from './models';

export interface RunPoint {
  step: number;
  split: string;
  metrics: Record<string, number>;
  loggedAt: number;
}

export interface RunView {
  modelId: string;
  history: RunPoint[];
}

/** One history entry split into one point per split it holds (a /log call holds one). */
export function pointsOf(entry: RunHistoryEntry): RunPoint[] {
  const bySplit = new Map<string, Record<string, number>>();
  for (const [key, value] of Object.entries(entry.metrics)) {
    const slash = key.indexOf('/');
    const split = slash > 0 ? key.slice(0, slash) : '';
    const name = slash > 0 ? key.slice(slash + 1) : key;
    const metrics = bySplit.get(split) ?? {};
    metrics[name] = value;
    bySplit.set(split, metrics);
  }
  return [...bySplit].map(([split, metrics]) => ({ step: entry.step, split, metrics, loggedAt: entry.recordedAt }));
}

/** The split training metrics are listed under. */
export const TRAINING_SPLIT = 'training';

/** Mean of every number the events carry, and how many there were. */
function meanMetrics(events: readonly JobEventRecord[]): Record<string, number> {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const e of events) {
    for (const [k, v] of Object.entries(e.data)) {
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      const s = sums.get(k) ?? { sum: 0, n: 0 };
      s.sum += v;
      s.n += 1;
      sums.set(k, s);
    }
  }
  const out: Record<string, number> = Object.fromEntries([...sums].map(([k, s]) => [k, s.sum / s.n]));
  out.gradient_steps = events.length;
  return out;
}

/** One point per completed job with gradient steps whose checkpoint still exists. */
async function trainingPoints(ctx: ServiceContext, modelId: string): Promise<RunPoint[]> {
  const jobs = (await ctx.db.getAllFromIndex('trainingJobs', 'by-model', modelId)).filter(
    (j) => j.status === 'COMPLETED' && j.trainingStart !== null && j.trainingEnd !== null,
  );
  if (jobs.length === 0) return [];
  const checkpoints = await ctx.db.getAllFromIndex(
    'checkpoints',
    'by-model-step',
    IDBKeyRange.bound([modelId, -1], [modelId, Number.MAX_SAFE_INTEGER]),
  );
  const points: RunPoint[] = [];
  for (const job of jobs) {
    // The checkpoint a job registers is created while it runs (jobs of a model run one at a time).
    const made = checkpoints.filter((c) => c.createdAt >= job.trainingStart! && c.createdAt <= job.trainingEnd!);
    if (made.length === 0) continue;
    const events = await ctx.db.getAllFromIndex(
      'jobEvents',
      'by-job-seq',
      IDBKeyRange.bound([job.id, 0], [job.id, Number.MAX_SAFE_INTEGER]),
    );
    const steps = events.filter((e) => e.type === 'gradient_step');
    if (steps.length === 0) continue;
    points.push({
      step: Math.max(...made.map((c) => c.step)),
      split: TRAINING_SPLIT,
      metrics: meanMetrics(steps),
      loggedAt: job.trainingEnd!,
    });
  }
  return points;
}

export async function readRun(ctx: ServiceContext, caller: Principal, modelId: string): Promise<RunView> {
  const model = await requireModel(ctx, caller, modelId);
  const logged = (await runHistory(ctx.db, model.runId)).flatMap(pointsOf);
  // In time order; a sort is stable, so points recorded together keep their order.
  const history = [...logged, ...(await trainingPoints(ctx, modelId))].sort((a, b) => a.loggedAt - b.loggedAt);
  return { modelId, history };
}

export interface LoggedGroup {
  /** "{log id}:{index in that log}": stable, and usable as the `after` cursor. */
  id: string;
  split: string;
  step: number;
  loggedAt: number;
  group: unknown;
}

export interface TrajectoryQuery {
  split?: string;
  step?: number;
  after?: string;
  limit: number;
}

/** The model's logged groups in logging order, filtered by split and step, paged. */
export async function listLoggedGroups(
  ctx: ServiceContext,
  caller: Principal,
  modelId: string,
  q: TrajectoryQuery,
): Promise<Page<LoggedGroup>> {
  await requireModel(ctx, caller, modelId);
  const page = await pageTrajectoryGroups(ctx.db, modelId, q);
  return { items: page.items.map(({ id, split, step, loggedAt, group }) => ({ id, split, step, loggedAt, group })), hasMore: page.hasMore };
}
