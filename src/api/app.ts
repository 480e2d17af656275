/**
 * The /v1 HTTP app: a Hono app (standard Request -> Response) with request ids, bearer
 * authentication and then a body size limit on every route, and the route families mounted
 * under their prefixes. The engine worker serves it behind the Service Worker; tests call `app.request()`;
 * the same app could be served from Node unchanged.
 *
 * Not here: business logic (src/service), transport (src/host).
 */
import { Hono } from 'hono';
import { requestId } from 'hono/request-id';
import { bearerAuth } from './auth';
import { limitBody } from './body-stream';
import { chatConcurrency } from './chat-concurrency';
import type { AppDeps, AppEnv } from './env';
import { errorResponse, onError } from './errors';
import { limitJsonDepth } from './json-depth';
import { trackOpenRequests } from './open-requests';
import { adapters } from './routes/adapters';
import { apiKeys } from './routes/api-keys';
import { artifacts } from './routes/artifacts';
import { baseModels } from './routes/base-models';
import { chat } from './routes/chat';
import { engine } from './routes/engine';
import { jobList } from './routes/job-list';
import { models } from './routes/models';
import { openaiModels } from './routes/openai-models';
import { runs } from './routes/runs';
import { settings } from './routes/settings';
import { storage } from './routes/storage';
import { sftTrainingJobs, trainingJobs } from './routes/training-jobs';

export function createApp(deps: AppDeps): Hono<AppEnv> {
  // strict: false makes `/v1/chat/completions/` (a form clients send) match its route.
  const app = new Hono<AppEnv>({ strict: false });

  app.use('*', requestId());
  app.use('*', async function provideDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  app.use('/v1/*', bearerAuth());
  // After authentication, so that a refused request's body is never read.
  app.use('/v1/*', limitBody());
  // Before anything reads the body: it re-creates the request with a signal of its own.
  app.use('/v1/*', trackOpenRequests());
  app.use('/v1/*', limitJsonDepth());
  app.use('/v1/chat/*', chatConcurrency());

  app.route('/v1/preview/models', models);
  app.route('/v1/preview/models', adapters);
  app.route('/v1/preview/models', runs);
  app.route('/v1/preview/artifacts', artifacts);
  app.route('/v1/preview/training-jobs', trainingJobs);
  app.route('/v1/preview/training-jobs', jobList);
  app.route('/v1/preview/sft-training-jobs', sftTrainingJobs);
  app.route('/v1/preview/api-keys', apiKeys);
  app.route('/v1/preview/engine', engine);
  app.route('/v1/preview/storage', storage);
  app.route('/v1/preview/base-models', baseModels);
  app.route('/v1/preview/settings', settings);
  app.route('/v1/chat', chat);
  app.route('/v1/models', openaiModels);

  app.notFound((c) => errorResponse(c, 404, `Not found: ${c.req.method} ${c.req.path}.`));
  app.onError(onError);
  return app;
}
