/**
 * Repository of logged trajectory groups and the experiment record (run) they feed. Logging
 * writes the groups, merges the metrics into the latest checkpoint and appends them to the run
 * history in one transaction.
 *
 * Not here: computing the metrics (src/service/trajectories/metrics.ts).
 */
import { requireModelInTx } from './errors';
import type { HearthDb, RunRecord, TrajectoryLogRecord } from './schema';
import { writeTx } from './tx';

const MAX_STEP = Number.MAX_SAFE_INTEGER;

/**
 * Stores a log and attaches `prefixedMetrics` ("split/metric") to the model's latest checkpoint
 * (found inside the transaction, so a concurrent training step cannot slip between) and run.
 * Returns the step the metrics landed on (0 when the model has no checkpoint left).
 */
export async function recordTrajectoryLog(
  db: HearthDb,
  log: Omit<TrajectoryLogRecord, 'step'>,
  prefixedMetrics: Record<string, number>,
  runId: string,
): Promise<number> {
  return writeTx(db, ['models', 'checkpoints', 'runs', 'trajectoryLogs'], async (tx) => {
    await requireModelInTx(tx.objectStore('models'), log.modelId);
    const range = IDBKeyRange.bound([log.modelId, -1], [log.modelId, MAX_STEP]);
    const cursor = await tx.objectStore('checkpoints').index('by-model-step').openCursor(range, 'prev');
    const latest = cursor?.value;
    const step = latest?.step ?? 0;
    if (latest) {
      await tx.objectStore('checkpoints').put({ ...latest, metrics: { ...latest.metrics, ...prefixedMetrics } });
    }
    const run = await tx.objectStore('runs').get(runId);
    if (run) {
      run.history.push({ step, metrics: prefixedMetrics, recordedAt: log.createdAt });
      await tx.objectStore('runs').put(run);
    }
    await tx.objectStore('trajectoryLogs').add({ ...log, step });
    return step;
  });
}

export async function listTrajectoryLogs(db: HearthDb, modelId: string): Promise<TrajectoryLogRecord[]> {
  const logs = await db.getAllFromIndex('trajectoryLogs', 'by-model', modelId);
  return logs.sort((a, b) => a.createdAt - b.createdAt);
}

export async function getRun(db: HearthDb, runId: string): Promise<RunRecord | undefined> {
  return db.get('runs', runId);
}
