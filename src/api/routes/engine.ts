/**
 * /v1/preview/engine (Hearth's own): the engine's status (GPU adapter, features, limits or why
 * there is none; the backend serving chat and what it refuses; state; job queue; base models),
 * PATCH (admin key) `{backend: "auto" | "cpu"}` to choose the backend from the next engine start,
 * and `/events`, a Server-Sent Events feed that sends the status on connect and again whenever it
 * changes, for live views.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import { engineStatus, setBackendPreference } from '../../service/engine-status';
import { adminOnly } from '../auth';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { previewValidator } from '../validation';

/** Body of PATCH /v1/preview/engine. */
const UpdateEngineRequest = z.strictObject({
  /** "auto": WebGPU when there is an adapter, else the CPU; "cpu": always the CPU. */
  backend: z.enum(['auto', 'cpu']),
});

export const engine = new Hono<AppEnv>();

/** Keeps idle connections (and proxies) from timing out; SSE comments are ignored by clients. */
const KEEPALIVE_MS = 15_000;

engine.get('/', async (c) => {
  const deps = c.get('deps');
  return c.json(await engineStatus(deps.services, deps.engine, c.get('principal')));
});

engine.patch('/', adminOnly('Choosing the backend'), requireJsonBody(), previewValidator('json', UpdateEngineRequest), async (c) => {
  const deps = c.get('deps');
  await setBackendPreference(deps.services, c.req.valid('json').backend);
  return c.json(await engineStatus(deps.services, deps.engine, c.get('principal')));
});

engine.get('/events', (c) => {
  const deps = c.get('deps');
  return streamSSE(c, async (stream) => {
    let changed = true;
    let wakeUp: (() => void) | undefined;
    const unsubscribe = deps.onEngineChange(() => {
      changed = true;
      wakeUp?.();
    });
    stream.onAbort(() => {
      unsubscribe();
      wakeUp?.();
    });
    let id = 0;
    while (!stream.aborted) {
      if (changed) {
        changed = false;
        await stream.writeSSE({
          event: 'status',
          id: String(id++),
          data: JSON.stringify(await engineStatus(deps.services, deps.engine, c.get('principal'))),
        });
      }
      await new Promise<void>((resolve) => {
        wakeUp = resolve;
        setTimeout(resolve, KEEPALIVE_MS);
      });
      wakeUp = undefined;
      if (!changed && !stream.aborted) await stream.write(': keepalive\n\n');
    }
    unsubscribe();
  });
});
