/**
 * Repository of running jobs' progress (JobProgressRecord): what makes a training job resumable
 * when the tab hosting the engine closes mid-job.
 *
 * Crash safety comes from transactions: a step's progress is saved in the same transaction as
 * its gradient_step event, and the job's checkpoint (with its files) in the same transaction as
 * the mark that it was stored. So after a crash the event log, the saved step and the checkpoint
 * list always agree: a resumed job neither repeats nor skips a step, never lists a second or a
 * half-written checkpoint.
 *
 * Not here: what a step trains (the service's Trainer), the job's status changes (training-jobs.ts).
 */
import type { CheckpointFileRecord, CheckpointRecord, HearthDb, JobEventRecord, JobProgressRecord } from './schema';
import { JobGoneError, JobStatusConflictError, type NewEvent } from './training-jobs';
import { writeTx } from './tx';
import { DuplicateStepError } from './checkpoints';

export async function getJobProgress(db: HearthDb, jobId: string): Promise<JobProgressRecord | undefined> {
  return db.get('jobProgress', jobId);
}

/** Saves a RUNNING job's progress and appends its event, together. */
export async function commitStep(db: HearthDb, progress: JobProgressRecord, event: NewEvent): Promise<void> {
  await writeTx(db, ['trainingJobs', 'jobEvents', 'jobProgress'], async (tx) => {
    const job = await tx.objectStore('trainingJobs').get(progress.jobId);
    if (!job) throw new JobGoneError(`Training job ${progress.jobId} no longer exists.`);
    if (job.status !== 'RUNNING') throw new JobStatusConflictError(`Training job ${job.id} is ${job.status}, not RUNNING.`);
    const record: JobEventRecord = { ...event, jobId: job.id, principalId: job.principalId, seq: job.nextEventSeq };
    await tx.objectStore('jobEvents').add(record);
    await tx.objectStore('trainingJobs').put({ ...job, nextEventSeq: job.nextEventSeq + 1 });
    await tx.objectStore('jobProgress').put(progress);
  });
}

/**
 * Stores a RUNNING job's checkpoint and its files, and marks the job's progress as checkpointed,
 * in one transaction. The step must be free (the model's latest + 1 when the job planned it).
 */
export async function commitJobCheckpoint(
  db: HearthDb,
  checkpoint: CheckpointRecord,
  files: CheckpointFileRecord[],
  progress: JobProgressRecord,
): Promise<void> {
  await writeTx(db, ['models', 'checkpoints', 'checkpointFiles', 'trainingJobs', 'jobProgress'], async (tx) => {
    const job = await tx.objectStore('trainingJobs').get(progress.jobId);
    if (!job || !(await tx.objectStore('models').get(checkpoint.modelId))) {
      throw new JobGoneError(`Training job ${progress.jobId} or its model no longer exists.`);
    }
    if (job.status !== 'RUNNING') throw new JobStatusConflictError(`Training job ${job.id} is ${job.status}, not RUNNING.`);
    const taken = await tx.objectStore('checkpoints').index('by-model-step').getKey([checkpoint.modelId, checkpoint.step]);
    if (taken) throw new DuplicateStepError(`Model ${checkpoint.modelId} already has a checkpoint at step ${checkpoint.step}.`);
    await tx.objectStore('checkpoints').add(checkpoint);
    for (const file of files) await tx.objectStore('checkpointFiles').add(file);
    await tx.objectStore('jobProgress').put({ ...progress, checkpointStep: checkpoint.step });
  });
}

export async function deleteJobProgress(db: HearthDb, jobId: string): Promise<void> {
  await db.delete('jobProgress', jobId);
}

/** Deletes progress left by jobs that are no longer RUNNING (a host died between the end and the clean-up). */
export async function sweepJobProgress(db: HearthDb): Promise<number> {
  return writeTx(db, ['trainingJobs', 'jobProgress'], async (tx) => {
    let removed = 0;
    for (const jobId of await tx.objectStore('jobProgress').getAllKeys()) {
      const job = await tx.objectStore('trainingJobs').get(jobId);
      if (job?.status !== 'RUNNING') {
        await tx.objectStore('jobProgress').delete(jobId);
        removed++;
      }
    }
    return removed;
  });
}
