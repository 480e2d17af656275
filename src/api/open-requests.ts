/**
 * Registers every /v1 request in flight under its principal (service/principal-activity.ts), so
 * that revoking a principal's last key, or deleting it, aborts what it has open (issue 10,
 * item 8): the request's signal aborts (a chat stops generating), and an open stream (a chat's
 * SSE, the engine feed) ends at once with the reason.
 *
 * Not here: deciding when to abort (the service).
 */
import type { MiddlewareHandler } from 'hono';
import { openRequests } from '../service/principal-activity';
import type { AppEnv } from './env';
import { holdUntilAnswered } from './stream-end';

export function trackOpenRequests(): MiddlewareHandler<AppEnv> {
  return async function trackOpenRequests(c, next) {
    const controller = new AbortController();
    const close = openRequests(c.get('deps').services).open(c.get('principal').id, controller);
    // Handlers listen to the request's signal: it now also aborts when the principal loses access.
    const raw = c.req.raw;
    c.req.raw = new Request(raw, { signal: AbortSignal.any([raw.signal, controller.signal]) });
    await holdUntilAnswered(c, next, close, controller.signal);
  };
}
