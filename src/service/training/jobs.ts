/**
 * Training jobs as requests see them: creating RL and SFT jobs (validated input is stored with
 * the job, and the job is queued), reading a job, and paging its events.
 *
 * Reference: specification endpoints 2, 3, 5, 6; docs/reference/art-compat.md §1.7-§1.10, §4.
 */
import { listJobEvents, getJob, insertJob, PendingLimitError } from '../../store/training-jobs';
import type { Page } from '../../store/page';
import type { ArtifactRecord, JobEventRecord, TrainingJobRecord } from '../../store/schema';
import type { Principal } from '../principal';
import type { ServiceContext } from '../context';
import { InvalidInputError, NotFoundError, NotSupportedError, TooManyRequestsError } from '../errors';
import { newId } from '../ids';
import { artifactForJob, artifactIdOf, dataFile } from '../artifacts';
import { requireModel } from '../models';
import { withoutNulls, type RlJobInput, type SftJobInput, type TrajectoryGroupInput } from './job-input';
import { resolveRlSettings } from './rl-config';
import { parseSftJsonl, resolveTrainingData } from './sft-data';

/** ART's SFT defaults (docs/reference/art-compat.md §4): batch size 2 ("auto"), learning rate 5e-5. */
export const SFT_DEFAULT_BATCH_SIZE = 2;
export const SFT_DEFAULT_LEARNING_RATE = 5e-5;
/**
 * Training jobs one principal may have waiting (issue 10, item 7): the queue is shared by every
 * principal (the runner serves them round-robin), so one key cannot bury the others' jobs. ART
 * creates one job per step and waits for it.
 */
export const MAX_PENDING_JOBS_PER_PRINCIPAL = 8;

/** Inserts the job unless its principal already has MAX_PENDING_JOBS_PER_PRINCIPAL waiting (429). */
async function queueJob(ctx: ServiceContext, job: TrainingJobRecord, input: unknown, artifact?: ArtifactRecord): Promise<void> {
  try {
    await insertJob(ctx.db, job, input, artifact, MAX_PENDING_JOBS_PER_PRINCIPAL);
  } catch (err) {
    if (!(err instanceof PendingLimitError)) throw err;
    throw new TooManyRequestsError(
      `This key already has ${err.maxPending} training jobs pending: wait for one to start, then create the next.`,
    );
  }
  ctx.jobs.wake();
}

let lastQueuedAt = 0;
/** Strictly increasing within this engine, so jobs created in the same millisecond keep their order. */
function queuePosition(now: number): number {
  lastQueuedAt = Math.max(now, lastQueuedAt + 0.001);
  return lastQueuedAt;
}

function newJob(ctx: ServiceContext, caller: Principal, modelId: string, kind: 'rl' | 'sft'): TrainingJobRecord {
  const now = ctx.now();
  return {
    id: newId(),
    principalId: caller.id,
    modelId,
    kind,
    status: 'PENDING',
    queuedAt: queuePosition(now),
    createdAt: now,
    trainingStart: null,
    trainingEnd: null,
    errorMessage: null,
    nextEventSeq: 0,
  };
}

export interface CreateRlJob {
  model_id: string;
  trajectory_groups: TrajectoryGroupInput[];
  experimental_config?: Record<string, unknown> | null;
}

/** A backend that cannot train (the CPU one) refuses the job now, rather than leaving it PENDING. */
async function requireTraining(ctx: ServiceContext): Promise<void> {
  const caps = await ctx.capabilities?.();
  if (caps && !caps.training) throw new NotSupportedError(`Training ${caps.missing}.`);
}

export async function createRlJob(ctx: ServiceContext, caller: Principal, req: CreateRlJob): Promise<TrainingJobRecord> {
  await requireModel(ctx, caller, req.model_id);
  await requireTraining(ctx);
  const experimentalConfig = withoutNulls(req.experimental_config);
  // A setting Hearth cannot honour is refused now (422), not discovered when the job runs.
  resolveRlSettings(experimentalConfig);
  const job = newJob(ctx, caller, req.model_id, 'rl');
  const input: RlJobInput = { kind: 'rl', trajectoryGroups: req.trajectory_groups, experimentalConfig };
  await queueJob(ctx, job, input);
  return job;
}

export interface CreateSftJob {
  model_id: string;
  training_data_url?: string;
  training_folder_url?: string;
  config?: {
    batch_size?: number | null;
    learning_rate?: number | number[] | null;
    assistant_turns?: 'all' | 'last' | null;
  } | null;
  experimental_config?: Record<string, unknown> | null;
}

/** `signal`: the request's; aborting it stops fetching the training data (the client left, or the Service Worker gave up). */
export async function createSftJob(
  ctx: ServiceContext,
  caller: Principal,
  req: CreateSftJob,
  signal?: AbortSignal,
): Promise<TrainingJobRecord> {
  await requireModel(ctx, caller, req.model_id);
  await requireTraining(ctx);
  const url = (req.training_data_url ?? req.training_folder_url)!;
  // An uploaded artifact (POST /v1/preview/artifacts) is read from the store; any other URL is
  // resolved before anything is written, so a bad URL leaves no trace.
  const uploadedId = artifactIdOf(ctx, url);
  const uploaded = uploadedId ? await artifactForJob(ctx, caller, uploadedId, req.model_id) : null;
  const data = uploaded
    ? { fileName: dataFile(uploaded).name, bytes: new Uint8Array(dataFile(uploaded).bytes) }
    : await resolveTrainingData(url, ctx.baseUrl, ctx.fetch, signal);
  const examples = parseSftJsonl(data.bytes);
  const batchSize = req.config?.batch_size ?? SFT_DEFAULT_BATCH_SIZE;
  const numBatches = Math.ceil(examples.length / batchSize);
  const learningRate = req.config?.learning_rate ?? SFT_DEFAULT_LEARNING_RATE;
  if (Array.isArray(learningRate) && learningRate.length !== numBatches) {
    throw new InvalidInputError(
      ['body', 'config', 'learning_rate'],
      `The learning-rate schedule has ${learningRate.length} entries but the data makes ${numBatches} batches ` +
        `(${examples.length} examples, batch size ${batchSize}); give one rate per batch.`,
      learningRate,
    );
  }
  const job = newJob(ctx, caller, req.model_id, 'sft');
  const artifact: ArtifactRecord = uploaded ?? {
    id: newId(),
    principalId: caller.id,
    modelId: req.model_id,
    kind: 'sft-data',
    name: `sft-data-${job.id.slice(0, 8)}`,
    sourceUrl: url.startsWith('data:') ? `${url.slice(0, 64)}…` : url,
    files: [{ name: data.fileName, bytes: data.bytes.slice().buffer }],
    createdAt: job.createdAt,
  };
  const input: SftJobInput = {
    kind: 'sft',
    trainingDataUrl: uploaded ? url : artifact.sourceUrl,
    artifactId: artifact.id,
    batchSize,
    learningRate,
    assistantTurns: req.config?.assistant_turns ?? 'all',
    numExamples: examples.length,
    numBatches,
    experimentalConfig: withoutNulls(req.experimental_config),
  };
  await queueJob(ctx, job, input, uploaded ? undefined : artifact);
  return job;
}

/**
 * The job as clients see it: with the end the runner decided but could not store yet (storage is
 * full; src/service/training/job-ends.ts), so it never reads PENDING or RUNNING once it ended.
 */
export function withUnsavedEnd(ctx: ServiceContext, job: TrainingJobRecord): TrainingJobRecord {
  const end = ctx.jobs.unsavedEnd(job.id);
  return end ? { ...job, ...end.change } : job;
}

export async function requireJob(ctx: ServiceContext, caller: Principal, jobId: string): Promise<TrainingJobRecord> {
  const job = await getJob(ctx.db, caller.id, jobId);
  if (!job) throw new NotFoundError(`Training job ${jobId} not found.`);
  return withUnsavedEnd(ctx, job);
}

/** The job's events; an unsaved end's training_failed comes last, as it will be stored (same id). */
export async function listEventPage(
  ctx: ServiceContext,
  caller: Principal,
  jobId: string,
  req: { after?: string; limit: number },
): Promise<Page<JobEventRecord>> {
  const job = await requireJob(ctx, caller, jobId);
  const end = ctx.jobs.unsavedEnd(jobId);
  if (!end) return listJobEvents(ctx.db, jobId, req);
  if (req.after === end.event.id) return { items: [], hasMore: false };
  const page = await listJobEvents(ctx.db, jobId, req);
  // Stored meanwhile, or on the next page.
  if (page.hasMore || page.items.some((e) => e.id === end.event.id)) return page;
  if (page.items.length === req.limit) return { items: page.items, hasMore: true };
  const last: JobEventRecord = { ...end.event, jobId, principalId: job.principalId, seq: job.nextEventSeq };
  return { items: [...page.items, last], hasMore: false };
}
