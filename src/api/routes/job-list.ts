/**
 * GET /v1/preview/training-jobs (Hearth extension): the caller's training jobs, optionally of one
 * model (`model_id`), newest first by default, in the list envelope. Mounted beside the
 * training-jobs family (routes/training-jobs.ts), which owns creating and reading one job.
 */
import { Hono } from 'hono';
import { listJobPage } from '../../service/job-list';
import type { AppEnv } from '../env';
import { listEnvelope } from '../schemas/common';
import { JobListQuery } from '../schemas/runs';
import { previewValidator } from '../validation';
import { jobView } from '../views';

export const jobList = new Hono<AppEnv>();

jobList.get('/', previewValidator('query', JobListQuery), async (c) => {
  const q = c.req.valid('query');
  const page = await listJobPage(c.get('deps').services, c.get('principal'), {
    modelId: q.model_id,
    after: q.after,
    limit: q.limit,
    order: q.order,
  });
  return c.json(listEnvelope(page, jobView));
});
