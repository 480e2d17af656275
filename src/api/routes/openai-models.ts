/**
 * GET /v1/models (OpenAI's and vLLM's model list): what chat completions can serve for this
 * caller: every base model, and every checkpoint of the caller's registered models under its
 * inference name `wandb-artifact:///entity/project/name:step{N}`, each with `max_model_len`.
 *
 * Not here: the /v1/preview model registry (routes/models.ts).
 * Reference: vLLM `show_available_models` (ModelList / ModelCard).
 */
import { Hono } from 'hono';
import { listServableModels } from '../../service/chat/served-models';
import type { AppEnv } from '../env';

export const openaiModels = new Hono<AppEnv>();

openaiModels.get('/', async (c) => {
  const deps = c.get('deps');
  return c.json({ object: 'list', data: await listServableModels(deps.services, c.get('principal'), deps.engine.startedAt) });
});
