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
 * Not here: writing logs (trajectories/log.ts), computing metrics (trajectories/metrics.ts).
 */
import { paginate, type Page } from '../store/page';
import type { RunHistoryEntry } from '../store/schema';
import { getRun, listTrajectoryLogs } from '../store/trajectory-logs';
import type { Principal } from './api-keys';
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

export async function readRun(ctx: ServiceContext, caller: Principal, modelId: string): Promise<RunView> {
  const model = await requireModel(ctx, caller, modelId);
  const run = await getRun(ctx.db, model.runId);
  return { modelId, history: (run?.history ?? []).flatMap(pointsOf) };
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
export async function listLoggedGroups(ctx: ServiceContext, caller: Principal, modelId: string, q: TrajectoryQuery): Promise<Page<LoggedGroup>> {
  await requireModel(ctx, caller, modelId);
  const logs = (await listTrajectoryLogs(ctx.db, modelId)).filter(
    (log) => (q.split === undefined || log.split === q.split) && (q.step === undefined || log.step === q.step),
  );
  const groups = logs.flatMap((log) =>
    log.groups.map((group, i) => ({ id: `${log.id}:${i}`, split: log.split, step: log.step, loggedAt: log.createdAt, group })),
  );
  return paginate(groups, { after: q.after, limit: q.limit, order: 'asc' }, (g) => g.id);
}
