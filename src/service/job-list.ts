/**
 * Listing a principal's training jobs (GET /v1/preview/training-jobs), optionally for one
 * model, newest first unless asked otherwise. Jobs are few per principal (one per training step
 * a person asked for), so the caller's list is read whole (through the caller's models' index,
 * never another principal's records) and paged in memory with the platform's cursor rules; job inputs (trajectories, SFT data) live in another store and are never loaded here.
 *
 * Not here: creating or reading one job (training/jobs.ts), the job's events.
 */
import { paginate, type Page, type PageRequest } from '../store/page';
import type { TrainingJobRecord } from '../store/schema';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { requireModel } from './models';
import { withUnsavedEnd } from './training/jobs';

export interface JobListRequest extends PageRequest {
  modelId?: string;
}

/** Creation order, ties broken by queue order so two jobs created in one millisecond keep theirs. */
function byCreation(a: TrainingJobRecord, b: TrainingJobRecord): number {
  return a.createdAt - b.createdAt || a.queuedAt - b.queuedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export async function listJobPage(ctx: ServiceContext, caller: Principal, req: JobListRequest): Promise<Page<TrainingJobRecord>> {
  let jobs: TrainingJobRecord[];
  if (req.modelId !== undefined) {
    // An unknown (or another principal's) model is a 404, as for the model's other lists.
    await requireModel(ctx, caller, req.modelId);
    jobs = await ctx.db.getAllFromIndex('trainingJobs', 'by-model', req.modelId);
  } else {
    // Through the caller's own models (a job belongs to its model's owner), so another
    // principal's jobs are never read (issue 26: every principal's jobs were read, then filtered).
    const modelIds = await ctx.db.getAllKeysFromIndex('models', 'by-principal', caller.id);
    jobs = (await Promise.all(modelIds.map((id) => ctx.db.getAllFromIndex('trainingJobs', 'by-model', id)))).flat();
  }
  const own = jobs
    .filter((j) => j.principalId === caller.id)
    .map((j) => withUnsavedEnd(ctx, j))
    .sort(byCreation);
  return paginate(own, req, (j) => j.id);
}
