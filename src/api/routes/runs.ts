/**
 * A model's experiment record for the Runs view (Hearth extensions under /v1/preview/models):
 * GET /{id}/run, the metrics history by step and split; GET /{id}/trajectories, the logged
 * trajectory groups one by one, filtered by split and step, in the list envelope.
 */
import { Hono } from 'hono';
import { listLoggedGroups, readRun } from '../../service/runs';
import type { AppEnv } from '../env';
import { IdParam, listEnvelope } from '../schemas/common';
import { TrajectoryListQuery } from '../schemas/runs';
import { previewValidator } from '../validation';
import { iso } from '../views';

export const runs = new Hono<AppEnv>();

runs.get('/:id/run', previewValidator('param', IdParam), async (c) => {
  const run = await readRun(c.get('deps').services, c.get('principal'), c.req.valid('param').id);
  return c.json({
    object: 'run',
    model_id: run.modelId,
    history: run.history.map((p) => ({ step: p.step, split: p.split, metrics: p.metrics, logged_at: iso(p.loggedAt) })),
  });
});

runs.get('/:id/trajectories', previewValidator('param', IdParam), previewValidator('query', TrajectoryListQuery), async (c) => {
  const page = await listLoggedGroups(c.get('deps').services, c.get('principal'), c.req.valid('param').id, c.req.valid('query'));
  return c.json(
    listEnvelope(page, (g) => ({
      id: g.id,
      object: 'trajectory_group',
      split: g.split,
      step: g.step,
      logged_at: iso(g.loggedAt),
      group: g.group,
    })),
  );
});
