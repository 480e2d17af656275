/**
 * Repository of logged trajectory groups and the experiment record (run) they feed. Logging
 * writes the log, one record per group, merges the metrics into the latest checkpoint and appends
 * them to the run history in one transaction. Reads touch only what they return (issue 10): a
 * page of groups walks the index that matches its filter from the cursor's position, and the run
 * history is its own append-only records, so neither grows with what else was logged.
 *
 * Not here: computing the metrics (src/service/trajectories/metrics.ts), the API's page envelope.
 */
import { requireModelInTx } from './errors';
import { pageFromOverfetch, UnknownCursorError, type Page } from './page';
import type { HearthDb, RunHistoryEntry, TrajectoryGroupRecord, TrajectoryLogRecord } from './schema';
import { writeTx } from './tx';

const MAX_STEP = Number.MAX_SAFE_INTEGER;

/** A /log call as the service hands it over: the log and its groups in order. */
export type NewTrajectoryLog = Omit<TrajectoryLogRecord, 'step' | 'numGroups'> & { groups: readonly unknown[] };

/**
 * Stores a log and its groups and attaches `prefixedMetrics` ("split/metric") to the model's
 * latest checkpoint (found inside the transaction, so a concurrent training step cannot slip
 * between) and run. Returns the step the metrics landed on (0 when the model has no checkpoint left).
 */
export async function recordTrajectoryLog(
  db: HearthDb,
  log: NewTrajectoryLog,
  prefixedMetrics: Record<string, number>,
  runId: string,
): Promise<number> {
  return writeTx(db, ['models', 'checkpoints', 'runs', 'runHistory', 'trajectoryLogs', 'trajectoryGroups'], async (tx) => {
    await requireModelInTx(tx.objectStore('models'), log.modelId);
    const range = IDBKeyRange.bound([log.modelId, -1], [log.modelId, MAX_STEP]);
    const cursor = await tx.objectStore('checkpoints').index('by-model-step').openCursor(range, 'prev');
    const latest = cursor?.value;
    const step = latest?.step ?? 0;
    if (latest) {
      await tx.objectStore('checkpoints').put({ ...latest, metrics: { ...latest.metrics, ...prefixedMetrics } });
    }
    if (await tx.objectStore('runs').get(runId)) {
      const last = await tx.objectStore('runHistory').openCursor(IDBKeyRange.bound([runId, 0], [runId, MAX_STEP]), 'prev');
      const seq = (last?.value.seq ?? 0) + 1;
      await tx.objectStore('runHistory').add({ runId, seq, step, metrics: prefixedMetrics, recordedAt: log.createdAt });
    }
    const { groups, ...record } = log;
    await tx.objectStore('trajectoryLogs').add({ ...record, step, numGroups: groups.length });
    const lastGroup = await tx
      .objectStore('trajectoryGroups')
      .index('by-model-seq')
      .openCursor(IDBKeyRange.bound([log.modelId, 0], [log.modelId, MAX_STEP]), 'prev');
    let seq = lastGroup?.value.seq ?? 0;
    for (const [i, group] of groups.entries()) {
      await tx.objectStore('trajectoryGroups').add({
        id: `${log.id}:${i}`,
        modelId: log.modelId,
        principalId: log.principalId,
        logId: log.id,
        seq: ++seq,
        split: log.split,
        step,
        loggedAt: log.createdAt,
        group,
      });
    }
    return step;
  });
}

export interface GroupPageQuery {
  split?: string;
  step?: number;
  /** Id of the last group of the previous page (exclusive). */
  after?: string;
  limit: number;
}

/** A model's logged groups in logging order, filtered by split and step: one index range read per page. */
export async function pageTrajectoryGroups(db: HearthDb, modelId: string, q: GroupPageQuery): Promise<Page<TrajectoryGroupRecord>> {
  const tx = db.transaction('trajectoryGroups');
  let from = 0;
  if (q.after !== undefined) {
    const at = await tx.store.get(q.after);
    const inList =
      at && at.modelId === modelId && (q.split === undefined || at.split === q.split) && (q.step === undefined || at.step === q.step);
    if (!inList) throw new UnknownCursorError(q.after);
    from = at.seq;
  }
  const prefix: (string | number)[] = [modelId, ...(q.split !== undefined ? [q.split] : []), ...(q.step !== undefined ? [q.step] : [])];
  const index =
    q.split !== undefined && q.step !== undefined
      ? 'by-model-split-step-seq'
      : q.split !== undefined
        ? 'by-model-split-seq'
        : q.step !== undefined
          ? 'by-model-step-seq'
          : 'by-model-seq';
  const range = IDBKeyRange.bound([...prefix, from], [...prefix, MAX_STEP], true, false);
  const rows = await tx.store.index(index).getAll(range, q.limit + 1);
  return pageFromOverfetch(rows, q.limit);
}

/** A run's metrics history in recording order. */
export async function runHistory(db: HearthDb, runId: string): Promise<RunHistoryEntry[]> {
  const rows = await db.getAll('runHistory', IDBKeyRange.bound([runId, 0], [runId, MAX_STEP]));
  return rows.map(({ step, metrics, recordedAt }) => ({ step, metrics, recordedAt }));
}
