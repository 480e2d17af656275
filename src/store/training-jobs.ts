/**
 * Repository of training jobs, their inputs, and their events. Status changes go through
 * `updateJob`, a compare-and-set inside one transaction that also appends the events the change
 * causes, so a job's status and its event log can never disagree.
 *
 * Not here: which transitions are legal (src/service/training/state-machine.ts), the queue
 * (src/service/training/runner.ts).
 */
import { requireModelInTx } from './errors';
import type { ArtifactRecord, HearthDb, JobEventRecord, TrainingJobRecord, TrainingJobStatus } from './schema';
import { pageFromOverfetch, UnknownCursorError, type Page } from './page';
import { writeTx } from './tx';

const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** Thrown by insertJob when the principal already has `maxPending` jobs waiting. */
export class PendingLimitError extends Error {
  override name = 'PendingLimitError';
  constructor(readonly maxPending: number) {
    super(`${maxPending} training jobs are already pending for this key.`);
  }
}

/**
 * Persists a new job, its input and (for SFT) the artifact holding its data, all or nothing;
 * refused with PendingLimitError when the job's principal has `maxPending` PENDING jobs already
 * (counted in the same transaction, so two concurrent creates cannot both pass).
 */
export async function insertJob(
  db: HearthDb,
  job: TrainingJobRecord,
  input: unknown,
  artifact?: ArtifactRecord,
  maxPending = Infinity,
): Promise<void> {
  await writeTx(db, ['models', 'trainingJobs', 'jobInputs', 'artifacts'], async (tx) => {
    await requireModelInTx(tx.objectStore('models'), job.modelId);
    if (maxPending !== Infinity) {
      const pending = await tx
        .objectStore('trainingJobs')
        .index('by-status-queue')
        .getAll(IDBKeyRange.bound(['PENDING', -Infinity], ['PENDING', Infinity]));
      if (pending.filter((j) => j.principalId === job.principalId).length >= maxPending) throw new PendingLimitError(maxPending);
    }
    await tx.objectStore('trainingJobs').add(job);
    await tx.objectStore('jobInputs').add({ jobId: job.id, input });
    if (artifact) await tx.objectStore('artifacts').add(artifact);
  });
}

/** The job if it exists and belongs to `principalId`. */
export async function getJob(db: HearthDb, principalId: string, id: string): Promise<TrainingJobRecord | undefined> {
  const job = await db.get('trainingJobs', id);
  return job && job.principalId === principalId ? job : undefined;
}

/** Any principal's job: for the engine's own job runner only. */
export async function getJobForRunner(db: HearthDb, id: string): Promise<TrainingJobRecord | undefined> {
  return db.get('trainingJobs', id);
}

export async function getJobInput(db: HearthDb, jobId: string): Promise<unknown> {
  return (await db.get('jobInputs', jobId))?.input;
}

/** Whether the job's input is still stored (without reading it: trajectories can be large). */
export async function hasJobInput(db: HearthDb, jobId: string): Promise<boolean> {
  return (await db.getKey('jobInputs', jobId)) !== undefined;
}

/**
 * Deletes a job's input. Only for a job that is ending: a job without input is never run, and
 * the runner fails one it finds unfinished at start (src/service/training/job-ends.ts).
 */
export async function deleteJobInput(db: HearthDb, jobId: string): Promise<void> {
  await db.delete('jobInputs', jobId);
}

/** Jobs with a status, in queue order. */
export async function jobsWithStatus(db: HearthDb, status: TrainingJobStatus): Promise<TrainingJobRecord[]> {
  const range = IDBKeyRange.bound([status, -Infinity], [status, Infinity]);
  return db.getAllFromIndex('trainingJobs', 'by-status-queue', range);
}

export type NewEvent = Pick<JobEventRecord, 'id' | 'type' | 'data' | 'createdAt'>;

export class JobGoneError extends Error {
  override name = 'JobGoneError';
}

export class JobStatusConflictError extends Error {
  override name = 'JobStatusConflictError';
}

/**
 * Reads the job, checks it is in one of `expected` statuses, applies `change` and appends
 * `events` (numbered after the job's last event), in one transaction. Throws JobGoneError if the
 * job was deleted (its model was deleted), JobStatusConflictError if its status moved on.
 */
export async function updateJob(
  db: HearthDb,
  jobId: string,
  expected: readonly TrainingJobStatus[],
  change: Partial<Pick<TrainingJobRecord, 'status' | 'trainingStart' | 'trainingEnd' | 'errorMessage'>>,
  events: NewEvent[],
): Promise<TrainingJobRecord> {
  return writeTx(db, ['trainingJobs', 'jobEvents'], async (tx) => {
    const job = await tx.objectStore('trainingJobs').get(jobId);
    if (!job) throw new JobGoneError(`Training job ${jobId} no longer exists.`);
    if (!expected.includes(job.status)) {
      throw new JobStatusConflictError(`Training job ${jobId} is ${job.status}, expected ${expected.join(' or ')}.`);
    }
    const updated: TrainingJobRecord = { ...job, ...change, nextEventSeq: job.nextEventSeq + events.length };
    for (const [i, event] of events.entries()) {
      await tx.objectStore('jobEvents').add({ ...event, jobId, principalId: job.principalId, seq: job.nextEventSeq + i });
    }
    await tx.objectStore('trainingJobs').put(updated);
    return updated;
  });
}

/** Events of a job in creation order, strictly after the event `after` (an event id). */
export async function listJobEvents(db: HearthDb, jobId: string, req: { after?: string; limit: number }): Promise<Page<JobEventRecord>> {
  let fromSeq = 0;
  if (req.after !== undefined) {
    const cursorEvent = await db.get('jobEvents', req.after);
    if (!cursorEvent || cursorEvent.jobId !== jobId) throw new UnknownCursorError(req.after);
    fromSeq = cursorEvent.seq + 1;
  }
  const range = IDBKeyRange.bound([jobId, fromSeq], [jobId, MAX_SEQ]);
  const rows = await db.getAllFromIndex('jobEvents', 'by-job-seq', range, req.limit + 1);
  return pageFromOverfetch(rows, req.limit);
}
