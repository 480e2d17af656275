/**
 * Writing a training job's end (its terminal status with its event, one transaction) when the
 * browser's storage may be full, so that no job stays PENDING or RUNNING once the runner is done
 * with it (issue 10, item 9).
 *
 * When the quota refuses the end, the job's saved progress goes first (its adapter and optimizer
 * state, the largest record a job owns, of no use once it ends), then its input (trajectories or
 * the SFT settings, read only to run it), and the end is written again after each (a delete needs
 * no quota). When even that does not fit (Chromium may credit freed space only later), the job
 * ends in memory: FAILED with STORAGE_FULL_MESSAGE, which the API shows at once (status,
 * error_message, the training_failed event) and which is written, unchanged, as soon as it fits
 * (retried with backoff). Should the engine stop first, the job is left PENDING or RUNNING without
 * its input: the next engine's start finds it so and fails it with the same message
 * (`endedWithoutRecord`), so what a client read before and after is the same.
 *
 * Not here: when a job ends and why (runner.ts), the transaction itself (store/training-jobs.ts).
 */
import { deleteJobProgress } from '../../store/job-progress';
import type { HearthDb, TrainingJobRecord, TrainingJobStatus } from '../../store/schema';
import { deleteJobInput, hasJobInput, JobGoneError, JobStatusConflictError, updateJob, type NewEvent } from '../../store/training-jobs';
import { StorageQuotaError } from '../../store/tx';
import { transitionSources } from './state-machine';

export const STORAGE_FULL_MESSAGE =
  'The browser storage quota for this site is exhausted, so the job could not save its progress. Free space by deleting checkpoints or models, or allow this site more storage, and create the job again.';

/** A job's terminal status and the events that go with it. */
export interface JobEnd {
  status: 'COMPLETED' | 'FAILED';
  trainingEnd: number;
  errorMessage: string | null;
  events: NewEvent[];
}

/** An end decided but not stored yet: always FAILED with STORAGE_FULL_MESSAGE and its event. */
export interface UnsavedEnd {
  change: { status: 'FAILED'; trainingEnd: number; errorMessage: string };
  event: NewEvent;
}

// Retries of unsaved ends: 1 s, 2 s, 4 s ... then every minute, for about an hour. Past that the
// end stays in memory until the next engine start fails the job (its input is gone).
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 60_000;
const RETRY_ATTEMPTS = 60;

export class JobEnds {
  private readonly unsaved = new Map<string, UnsavedEnd>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private retrying = false;
  private attempts = 0;
  private stopped = false;

  constructor(
    private readonly db: HearthDb,
    private readonly failedEvent: (errorMessage: string) => NewEvent,
  ) {}

  /** The end decided for this job but not stored yet, if any: the job reads as ended by it. */
  get(jobId: string): UnsavedEnd | undefined {
    return this.unsaved.get(jobId);
  }

  /**
   * Ends a job whose status is one of `from`: stored, or, when storage is full, kept here as
   * FAILED and stored later. A job deleted meanwhile needs nothing; JobStatusConflictError when
   * its status is not one of `from`.
   */
  async end(jobId: string, from: readonly TrainingJobStatus[], end: JobEnd): Promise<void> {
    // Ended already, as a client may have read: that end stands.
    if (this.unsaved.has(jobId)) return;
    const change = { status: end.status, trainingEnd: end.trainingEnd, errorMessage: end.errorMessage };
    const freeing = [async () => {}, () => deleteJobProgress(this.db, jobId), () => deleteJobInput(this.db, jobId)];
    for (const free of freeing) {
      await free();
      try {
        await updateJob(this.db, jobId, from, change, end.events);
        await deleteJobProgress(this.db, jobId);
        return;
      } catch (err) {
        if (err instanceof JobGoneError) return;
        if (!(err instanceof StorageQuotaError)) throw err;
      }
    }
    console.error(
      `[hearth] training job ${jobId} could not be marked ${end.status} (${end.errorMessage ?? 'no error'}): storage is full; ` +
        'it reads as FAILED and is written once it fits.',
    );
    this.unsaved.set(jobId, {
      change: { status: 'FAILED', trainingEnd: end.trainingEnd, errorMessage: STORAGE_FULL_MESSAGE },
      event: this.failedEvent(STORAGE_FULL_MESSAGE),
    });
    this.attempts = 0;
    this.schedule();
  }

  /** Stops retrying (engine shutdown): the next engine's start fails what is still unsaved. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopped || this.retrying || this.timer !== undefined || this.unsaved.size === 0) return;
    if (this.attempts >= RETRY_ATTEMPTS) {
      console.error(`[hearth] ${this.unsaved.size} training job end(s) still do not fit; the next engine start records them.`);
      return;
    }
    const delay = Math.min(RETRY_FIRST_MS * 2 ** this.attempts, RETRY_MAX_MS);
    this.attempts++;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.retry();
    }, delay);
  }

  private async retry(): Promise<void> {
    this.retrying = true;
    try {
      for (const [jobId, end] of this.unsaved) {
        if (this.stopped) return;
        try {
          await updateJob(this.db, jobId, transitionSources('fail'), end.change, [end.event]);
        } catch (err) {
          if (err instanceof StorageQuotaError) continue;
          // Gone (its model was deleted) or ended otherwise: nothing left to write.
          if (!(err instanceof JobGoneError) && !(err instanceof JobStatusConflictError)) {
            console.error(`[hearth] writing the end of training job ${jobId} failed:`, err);
            continue;
          }
        }
        this.unsaved.delete(jobId);
      }
    } finally {
      this.retrying = false;
      this.schedule();
    }
  }
}

/**
 * Whether a job found PENDING or RUNNING at start is one whose end an engine decided but could
 * not store before it stopped: its input is gone (JobEnds.end deletes it before keeping the end
 * in memory; a live job always has one).
 */
export async function endedWithoutRecord(db: HearthDb, job: TrainingJobRecord): Promise<boolean> {
  return !(await hasJobInput(db, job.id));
}
