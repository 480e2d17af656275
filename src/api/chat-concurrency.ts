/**
 * Caps on chat requests in flight (issue 10, item 7; rows since issue 26): one (non-admin)
 * principal may hold at most MAX_CHAT_ROWS_PER_PRINCIPAL batch rows, one per choice (`n`), so
 * one key cannot fill the engine's batch while others wait (a single chat with n = 64 and
 * ignore_eos held every row), and at most MAX_CHATS_IN_FLIGHT requests are in flight in all,
 * which bounds the scheduler's waiting queue (every request in it is one of these). Over a cap:
 * 429 "Concurrency limit reached for requests", as the hosted service answers (clients such as
 * the openai SDK retry 429 with backoff); a request whose `n` alone is over the key's cap can
 * never be served and is a 400 naming the limit. A request holds its rows until its answer is
 * complete: a non-streaming completion when the handler returns, a stream when its body ends,
 * errors or is cancelled (the client went away). The admin key (the local owner's own tabs and
 * training demo) is held only to the total cap.
 *
 * The middleware admits a request holding one row, before its body is parsed; the chat route
 * claims the rest once `n` is known (`c.get('chatRows')`).
 *
 * Not here: the engine's batch and its fair admission across keys (engine/generate/scheduler.ts,
 * fair-order.ts), job queue fairness (service/training/runner.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { ChatRequestError } from '../service/chat/errors';
import { ConcurrencyLimitError } from '../service/errors';
import type { AppEnv } from './env';
import { holdUntilAnswered } from './stream-end';

/** Batch rows (choices in flight) one non-admin principal may hold: half the engine's 64 rows. */
export const MAX_CHAT_ROWS_PER_PRINCIPAL = 32;
/** Chat requests in flight across all principals: the bound on the scheduler's waiting queue. */
export const MAX_CHATS_IN_FLIGHT = 256;

export function chatConcurrency(): MiddlewareHandler<AppEnv> {
  const perPrincipal = new Map<string, number>();
  let total = 0;
  return async function chatConcurrency(c, next) {
    const principal = c.get('principal');
    const rowsOf = () => perPrincipal.get(principal.id) ?? 0;
    if (total >= MAX_CHATS_IN_FLIGHT || (!principal.admin && rowsOf() + 1 > MAX_CHAT_ROWS_PER_PRINCIPAL)) {
      throw new ConcurrencyLimitError();
    }
    let mine = 1;
    perPrincipal.set(principal.id, rowsOf() + 1);
    total++;
    c.set('chatRows', {
      claim(rows) {
        const extra = rows - mine;
        if (extra <= 0) return;
        if (!principal.admin) {
          if (rows > MAX_CHAT_ROWS_PER_PRINCIPAL) {
            throw new ChatRequestError(
              `n is ${rows}, but one API key may hold at most ${MAX_CHAT_ROWS_PER_PRINCIPAL} batch rows (one per choice) at a time; ask for fewer choices.`,
              'n',
            );
          }
          if (rowsOf() + extra > MAX_CHAT_ROWS_PER_PRINCIPAL) throw new ConcurrencyLimitError();
        }
        mine = rows;
        perPrincipal.set(principal.id, rowsOf() + extra);
      },
    });
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      total--;
      const left = rowsOf() - mine;
      if (left > 0) perPrincipal.set(principal.id, left);
      else perPrincipal.delete(principal.id);
    };
    await holdUntilAnswered(c, next, release);
  };
}
