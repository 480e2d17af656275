/**
 * /v1/preview/models: registration, listing, reading and deleting models; a model's checkpoints
 * (list, delete) and trajectory logging. Handlers validate, make one service call, and map the
 * result to JSON.
 *
 * Reference: specification endpoints 4, 7, 8, 9; docs/reference/art-compat.md §1.2-§1.6.
 */
import { Hono } from 'hono';
import { deleteCheckpoints, listCheckpointPage } from '../../service/checkpoints';
import { deleteModel, listModelPage, registerModel, requireModel } from '../../service/models';
import { logTrajectories } from '../../service/trajectories/log';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { IdParam, listEnvelope, ListQuery } from '../schemas/common';
import { DeleteCheckpointsRequest, RegisterModelRequest } from '../schemas/models';
import { LogRequest } from '../schemas/trajectories';
import { previewValidator } from '../validation';
import { checkpointView, modelView } from '../views';

export const models = new Hono<AppEnv>();

models.post('/', requireJsonBody(), previewValidator('json', RegisterModelRequest), async (c) => {
  const model = await registerModel(c.get('deps').services, c.get('principal'), c.req.valid('json'));
  return c.json(modelView(model), 200);
});

models.get('/', previewValidator('query', ListQuery), async (c) => {
  const page = await listModelPage(c.get('deps').services, c.get('principal'), c.req.valid('query'));
  return c.json(listEnvelope(page, modelView));
});

models.get('/:id', previewValidator('param', IdParam), async (c) => {
  const model = await requireModel(c.get('deps').services, c.get('principal'), c.req.valid('param').id);
  return c.json(modelView(model));
});

models.delete('/:id', previewValidator('param', IdParam), async (c) => {
  const id = c.req.valid('param').id;
  const result = await deleteModel(c.get('deps').services, c.get('principal'), id);
  return c.json({ model_id: id, deleted_checkpoints: result.deletedCheckpoints, deleted_run: result.deletedRun });
});

models.get('/:id/checkpoints', previewValidator('param', IdParam), previewValidator('query', ListQuery), async (c) => {
  const page = await listCheckpointPage(c.get('deps').services, c.get('principal'), c.req.valid('param').id, c.req.valid('query'));
  return c.json(listEnvelope(page, checkpointView));
});

models.delete(
  '/:id/checkpoints',
  previewValidator('param', IdParam),
  requireJsonBody(),
  previewValidator('json', DeleteCheckpointsRequest),
  async (c) => {
    const result = await deleteCheckpoints(c.get('deps').services, c.get('principal'), c.req.valid('param').id, c.req.valid('json').steps);
    return c.json(result);
  },
);

models.post('/:id/log', previewValidator('param', IdParam), requireJsonBody(), previewValidator('json', LogRequest), async (c) => {
  await logTrajectories(c.get('deps').services, c.get('principal'), c.req.valid('param').id, c.req.valid('json'));
  // ART casts the response to None; the W&B schema is `{}`.
  return c.json({});
});
