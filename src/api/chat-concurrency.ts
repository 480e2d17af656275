/**
 * Caps on chat requests in flight (issue 10, item 7): at most MAX_CHATS_PER_PRINCIPAL per
 * principal, so one key cannot fill the engine's batch and its waiting queue while others wait,
 * and at most MAX_CHATS_IN_FLIGHT in all, which bounds the scheduler's waiting queue (every
 * request in it is one of these). Over a cap: 429 "Concurrency limit reached for requests", as
 * the hosted service answers (clients such as the openai SDK retry 429 with backoff). A request
 * holds its slot until its answer is complete: a non-streaming completion when the handler
 * returns, a stream when its body ends, errors or is cancelled (the client went away).
 * The admin key (the local owner's own tabs and training demo) is held only to the total cap.
 *
 * Not here: the engine's batch (engine/generate/scheduler.ts), job queue fairness
 * (service/training/runner.ts).
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './env';
import { errorResponse } from './errors';
import { holdUntilAnswered } from './stream-end';

/** Chat requests one (non-admin) principal may have in flight: half the engine's 64 batch rows. */
export const MAX_CHATS_PER_PRINCIPAL = 32;
/** Chat requests in flight across all principals: the bound on the scheduler's waiting queue. */
export const MAX_CHATS_IN_FLIGHT = 256;
export const CONCURRENCY_MESSAGE = 'Concurrency limit reached for requests';

export function chatConcurrency(): MiddlewareHandler<AppEnv> {
  const perPrincipal = new Map<string, number>();
  let total = 0;
  return async function chatConcurrency(c, next) {
    const principal = c.get('principal');
    const mine = perPrincipal.get(principal.id) ?? 0;
    if (total >= MAX_CHATS_IN_FLIGHT || (!principal.admin && mine >= MAX_CHATS_PER_PRINCIPAL)) {
      return errorResponse(c, 429, CONCURRENCY_MESSAGE, { 'Retry-After': '1' });
    }
    perPrincipal.set(principal.id, mine + 1);
    total++;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      total--;
      const left = (perPrincipal.get(principal.id) ?? 1) - 1;
      if (left > 0) perPrincipal.set(principal.id, left);
      else perPrincipal.delete(principal.id);
    };
    await holdUntilAnswered(c, next, release);
  };
}
