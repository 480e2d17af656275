/**
 * /v1/preview/training-jobs and /v1/preview/sft-training-jobs: creating RL and SFT jobs, reading
 * a job, and paging its events. SFT jobs share the /training-jobs/{id} namespace.
 *
 * Reference: specification endpoints 2, 3, 5, 6; docs/reference/art-compat.md §1.7-§1.10.
 */
import { Hono } from 'hono';
import { createRlJob, createSftJob, listEventPage, requireJob } from '../../service/training/jobs';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { EventsQuery, IdParam, listEnvelope } from '../schemas/common';
import { CreateRlJobRequest, CreateSftJobRequest } from '../schemas/training-jobs';
import { previewValidator } from '../validation';
import { eventView, jobView } from '../views';

export const trainingJobs = new Hono<AppEnv>();

trainingJobs.post('/', requireJsonBody(), previewValidator('json', CreateRlJobRequest), async (c) => {
  const job = await createRlJob(c.get('deps').services, c.get('principal'), c.req.valid('json'));
  return c.json(jobView(job));
});

trainingJobs.get('/:id', previewValidator('param', IdParam), async (c) => {
  const job = await requireJob(c.get('deps').services, c.get('principal'), c.req.valid('param').id);
  return c.json(jobView(job));
});

trainingJobs.get('/:id/events', previewValidator('param', IdParam), previewValidator('query', EventsQuery), async (c) => {
  const page = await listEventPage(c.get('deps').services, c.get('principal'), c.req.valid('param').id, c.req.valid('query'));
  return c.json(listEnvelope(page, eventView));
});

export const sftTrainingJobs = new Hono<AppEnv>();

sftTrainingJobs.post('/', requireJsonBody(), previewValidator('json', CreateSftJobRequest), async (c) => {
  const job = await createSftJob(c.get('deps').services, c.get('principal'), c.req.valid('json'), c.req.raw.signal);
  return c.json(jobView(job));
});
