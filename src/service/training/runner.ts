/**
 * The job runner: a queue over IndexedDB that runs an engine's training jobs one at a time,
 * round-robin across principals and in queue order within one, drives each through the state
 * machine, and hands it to the Trainer. Because the queue is the database, it survives reloads:
 * a new engine host picks up PENDING jobs, and a job it finds RUNNING (its old host died) is
 * resumed by the trainer or failed, never left RUNNING. Every job it takes ends COMPLETED or
 * FAILED, also when storage is full (job-ends.ts).
 *
 * Not here: training (the Trainer), request handling (jobs.ts), writing a job's end (job-ends.ts).
 */
import { getArtifact } from '../../store/artifacts';
import { latestCheckpoint } from '../../store/checkpoints';
import { commitJobCheckpoint, commitStep, getJobProgress, sweepJobProgress } from '../../store/job-progress';
import { getModel } from '../../store/models';
import {
  getJobForRunner,
  getJobInput,
  jobsWithStatus,
  JobGoneError,
  listJobEvents,
  updateJob,
  type NewEvent,
} from '../../store/training-jobs';
import type { CheckpointRecord, JobProgressRecord, TrainingJobRecord } from '../../store/schema';
import { StorageQuotaError } from '../../store/tx';
import { dataFile } from '../artifacts';
import { ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE } from '../adapters/peft-files';
import { readAdapter } from '../checkpoints';
import type { JobQueue, ServiceContext } from '../context';
import { newId } from '../ids';
import { endedWithoutRecord, JobEnds, STORAGE_FULL_MESSAGE, type UnsavedEnd } from './job-ends';
import type { TrainingJobInput } from './job-input';
import { parseSftJsonl } from './sft-data';
import { JobProgress, transitionSources, type JobEventType } from './state-machine';
import type { StepProgress, Trainer, TrainerContext } from './trainer';

export const INTERRUPTED_MESSAGE =
  'The job was interrupted: the tab hosting the Hearth engine closed while it was running. Create the job again to retry.';

export type RunnerContext = Omit<ServiceContext, 'jobs'>;

export class JobRunner implements JobQueue {
  private pumping: Promise<void> | undefined;
  private wanted = false;
  private stopped = false;
  private running: { jobId: string; abort: AbortController } | undefined;
  private resumable = new Set<string>();
  /** When each principal's last job started (a turn counter): the round-robin order. */
  private readonly served = new Map<string, number>();
  private turns = 0;
  private readonly listeners = new Set<() => void>();
  private readonly ends: JobEnds;

  constructor(
    private readonly ctx: RunnerContext,
    private readonly trainer: Trainer,
  ) {
    this.ends = new JobEnds(ctx.db, (message) => this.event('training_failed', { error_message: message }));
  }

  /**
   * Recovers jobs a dead host left unfinished, then starts the queue. Call once per engine.
   * A job whose end that host could not store (storage was full) fails as it read then; a job
   * it left RUNNING is resumed by the trainer or failed.
   */
  async start(): Promise<void> {
    for (const job of [...(await jobsWithStatus(this.ctx.db, 'RUNNING')), ...(await jobsWithStatus(this.ctx.db, 'PENDING'))]) {
      if (await endedWithoutRecord(this.ctx.db, job)) {
        await this.finish(job.id, 'fail', STORAGE_FULL_MESSAGE);
      } else if (job.status === 'RUNNING') {
        if (this.trainer.resumesInterruptedJobs) this.resumable.add(job.id);
        else await this.finish(job.id, 'fail', INTERRUPTED_MESSAGE);
      }
    }
    // Progress a dead host left behind for jobs that ended anyway.
    await sweepJobProgress(this.ctx.db);
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    this.wanted = true;
    this.pumping ??= this.pump().finally(() => {
      this.pumping = undefined;
      if (this.wanted && !this.stopped) this.wake();
      else this.notify();
    });
  }

  cancel(jobId: string, reason: string): void {
    if (this.running?.jobId === jobId) this.running.abort.abort(new Error(reason));
  }

  async failQueued(jobId: string, reason: string): Promise<void> {
    await this.finish(jobId, 'fail', reason, undefined, ['PENDING']);
    this.notify();
  }

  unsavedEnd(jobId: string): UnsavedEnd | undefined {
    return this.ends.get(jobId);
  }

  /** Stops taking jobs and aborts the one running (engine shutdown). */
  stop(): void {
    this.stopped = true;
    this.running?.abort.abort(new Error('The engine is shutting down.'));
    this.ends.stop();
  }

  /** Id of the job being trained now, if any. */
  get runningJobId(): string | undefined {
    return this.running?.jobId;
  }

  /** Resolves once no job is queued or running (for tests and orderly shutdown). */
  async idle(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  /** Called after every job state change (the engine's status feed listens). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  private async pump(): Promise<void> {
    while (this.wanted && !this.stopped) {
      this.wanted = false;
      for (;;) {
        if (this.stopped) return;
        const next = await this.nextJob();
        if (!next) break;
        await this.run(next.job, next.resumed);
        this.notify();
      }
    }
  }

  private async nextJob(): Promise<{ job: TrainingJobRecord; resumed: boolean } | undefined> {
    for (const id of this.resumable) {
      this.resumable.delete(id);
      const job = await getJobForRunner(this.ctx.db, id);
      if (job?.status === 'RUNNING') return { job, resumed: true };
    }
    // A job failed while storage was full is still PENDING in the store: it is not to run.
    const pending = (await jobsWithStatus(this.ctx.db, 'PENDING')).filter((j) => !this.ends.get(j.id));
    const job = nextRoundRobin(pending, this.served);
    if (job) this.served.set(job.principalId, ++this.turns);
    return job && { job, resumed: false };
  }

  /** Runs one job to its end. */
  private async run(pending: TrainingJobRecord, resumed: boolean): Promise<void> {
    const abort = new AbortController();
    this.running = { jobId: pending.id, abort };
    try {
      let job = pending;
      if (!resumed) {
        try {
          job = await updateJob(
            this.ctx.db,
            pending.id,
            transitionSources('start'),
            { status: 'RUNNING', trainingStart: this.ctx.now() },
            [],
          );
        } catch (err) {
          if (!(err instanceof StorageQuotaError)) throw err;
          // Not even RUNNING fits: it fails (PENDING -> FAILED) rather than stay queued with nothing to wake it.
          return await this.finish(pending.id, 'fail', messageOf(err));
        }
      }
      this.notify();
      const progress = resumed ? await this.replayEvents(job.id) : new JobProgress();
      let trainerCtx: TrainerContext;
      try {
        trainerCtx = await this.trainerContext(job, progress, abort.signal, resumed);
      } catch (err) {
        await this.finish(job.id, 'fail', messageOf(err));
        return;
      }
      try {
        await this.trainer.train(trainerCtx);
        if (abort.signal.aborted) throw abort.signal.reason;
        await this.finish(job.id, 'complete', null, progress);
      } catch (err) {
        if (err instanceof JobGoneError) return;
        await this.finish(job.id, 'fail', messageOf(abort.signal.aborted ? abort.signal.reason : err), progress);
      }
    } catch (err) {
      // The job was deleted with its model while running: nothing is left to update.
      if (!(err instanceof JobGoneError)) console.error('[hearth] job runner:', err);
    } finally {
      this.running = undefined;
    }
  }

  /** A resumed job's progress rebuilt from the events its previous host emitted. */
  private async replayEvents(jobId: string): Promise<JobProgress> {
    const progress = new JobProgress();
    let after: string | undefined;
    for (;;) {
      const page = await listJobEvents(this.ctx.db, jobId, { after, limit: 100 });
      for (const e of page.items) progress.record(e.type as JobEventType, e.data);
      if (!page.hasMore || page.items.length === 0) return progress;
      after = page.items[page.items.length - 1].id;
    }
  }

  /**
   * Ends a job with its terminal status and event, from any status it may end from (`from`);
   * stored later when storage is full, and reading as FAILED meanwhile (job-ends.ts).
   */
  private async finish(
    jobId: string,
    how: 'complete' | 'fail',
    error: string | null,
    progress?: JobProgress,
    from = transitionSources(how),
  ): Promise<void> {
    const type: JobEventType = how === 'complete' ? 'training_ended' : 'training_failed';
    const events: NewEvent[] = [];
    if (how === 'complete' && progress && !progress.started) {
      // ART expects training_started before the end; a trainer that skipped it trained on nothing.
      events.push(this.event('training_started', { num_sequences: 0 }));
    }
    events.push(this.event(type, how === 'fail' ? { error_message: error ?? 'Training failed with an unknown error.' } : {}));
    await this.ends.end(jobId, from, {
      status: how === 'complete' ? 'COMPLETED' : 'FAILED',
      trainingEnd: this.ctx.now(),
      errorMessage: how === 'fail' ? error : null,
      events,
    });
  }

  private progressRecord(job: TrainingJobRecord, step: StepProgress): JobProgressRecord {
    return { ...step, jobId: job.id, modelId: job.modelId, principalId: job.principalId, checkpointStep: null, updatedAt: this.ctx.now() };
  }

  private event(type: JobEventType, data: Record<string, unknown>): NewEvent {
    return { id: newId(), type, data, createdAt: this.ctx.now() };
  }

  private async emit(job: TrainingJobRecord, progress: JobProgress, type: JobEventType, data: Record<string, unknown>): Promise<void> {
    progress.record(type, data);
    await updateJob(this.ctx.db, job.id, ['RUNNING'], {}, [this.event(type, data)]);
    this.notify();
  }

  private async trainerContext(
    job: TrainingJobRecord,
    progress: JobProgress,
    signal: AbortSignal,
    resumed: boolean,
  ): Promise<TrainerContext> {
    const ctx = { ...this.ctx, jobs: this };
    const model = await getModel(this.ctx.db, job.principalId, job.modelId);
    if (!model) throw new JobGoneError(`Model ${job.modelId} no longer exists.`);
    const input = (await getJobInput(this.ctx.db, job.id)) as TrainingJobInput | undefined;
    if (!input) throw new Error(`Training job ${job.id} has no stored input.`);
    const owner = { id: job.principalId, name: '', entity: model.entity, admin: false };
    return {
      job,
      input,
      model,
      baseModel: await this.ctx.catalog.get(model.baseModel),
      latestCheckpoint: await latestCheckpoint(this.ctx.db, model.id),
      loadSftExamples: async () => {
        if (input.kind !== 'sft') throw new Error('Only SFT jobs have training examples.');
        const artifact = await getArtifact(this.ctx.db, job.principalId, input.artifactId);
        if (!artifact) throw new JobGoneError(`The training data of job ${job.id} no longer exists.`);
        return parseSftJsonl(new Uint8Array(dataFile(artifact).bytes));
      },
      readAdapter: (step) => readAdapter(ctx, owner, model.id, step),
      started: async (numSequences, data = {}) => {
        // A resumed job's previous host already announced the plan.
        if (resumed && progress.started) return;
        await this.emit(job, progress, 'training_started', { ...data, num_sequences: numSequences });
      },
      gradientStep: async (metrics, step) => {
        if (!step) return this.emit(job, progress, 'gradient_step', { ...metrics });
        progress.record('gradient_step', metrics);
        await commitStep(this.ctx.db, this.progressRecord(job, step), this.event('gradient_step', { ...metrics }));
        this.notify();
      },
      registerCheckpoint: async (adapter, metrics = {}) => {
        if (signal.aborted) throw signal.reason;
        const latest = await latestCheckpoint(this.ctx.db, model.id);
        const checkpoint: CheckpointRecord = {
          id: newId(),
          modelId: model.id,
          principalId: job.principalId,
          step: (latest?.step ?? 0) + 1,
          metrics,
          files: [ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE],
          createdAt: this.ctx.now(),
        };
        const saved = (await getJobProgress(this.ctx.db, job.id)) ?? this.progressRecord(job, EMPTY_PROGRESS);
        await commitJobCheckpoint(
          this.ctx.db,
          checkpoint,
          [
            { checkpointId: checkpoint.id, name: ADAPTER_CONFIG_FILE, bytes: adapter.adapterConfig.slice().buffer },
            { checkpointId: checkpoint.id, name: ADAPTER_MODEL_FILE, bytes: adapter.adapterModel.slice().buffer },
          ],
          { ...saved, updatedAt: this.ctx.now() },
        );
        return checkpoint;
      },
      savedProgress: resumed ? await getJobProgress(this.ctx.db, job.id) : undefined,
      signal,
      resumed,
    };
  }
}

/**
 * The next job, round-robin across principals (issue 10, item 7): the oldest pending job of the
 * principal whose last job started longest ago (never is longest), so a principal that queued
 * many jobs takes turns with the others instead of running them all first. Within a principal,
 * queue order. `pending` is in queue order.
 */
export function nextRoundRobin(pending: TrainingJobRecord[], served: ReadonlyMap<string, number>): TrainingJobRecord | undefined {
  let best: TrainingJobRecord | undefined;
  for (const job of pending) {
    if (!best || (served.get(job.principalId) ?? 0) < (served.get(best.principalId) ?? 0)) best = job;
  }
  return best;
}

const EMPTY_PROGRESS: StepProgress = {
  stepsDone: 0,
  adapter: new ArrayBuffer(0),
  optimizer: new ArrayBuffer(0),
  optimizerStep: 0,
  precomputed: null,
};

function messageOf(err: unknown): string {
  if (err instanceof StorageQuotaError) return STORAGE_FULL_MESSAGE;
  return err instanceof Error ? err.message : String(err);
}
