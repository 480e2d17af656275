/**
 * Error envelopes and the app's one error handler. /v1/preview answers FastAPI-style
 * `{"detail": "..."}` (422 bodies come from validation.ts); /v1/chat answers vLLM's
 * `{"error": {"message", "type", "param", "code"}}`. An unexpected error is a 500 logged with
 * the request id.
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { HearthError, InvalidInputError } from '../service/errors';
import { UnknownCursorError } from '../store/page';
import { closedForUpgrade } from '../store/schema';
import { StorageQuotaError } from '../store/tx';
import type { AppEnv } from './env';
import { errorEnvelope, isChatPath } from './error-envelope';

export { isChatPath } from './error-envelope';

/** One error body in the envelope of the family `path` belongs to. */
export function errorResponse(c: Context, status: ContentfulStatusCode, message: string, headers: Record<string, string> = {}): Response {
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  return c.json(errorEnvelope(c.req.path, status, message), status);
}

export function onError(err: Error, c: Context<AppEnv>): Response {
  if (err instanceof InvalidInputError) {
    if (isChatPath(c.req.path)) return errorResponse(c, 400, err.message);
    return c.json({ detail: [{ type: err.type, loc: err.loc, msg: err.message, input: err.input, ctx: err.ctx }] }, 422);
  }
  if (err instanceof HearthError) {
    const headers: Record<string, string> = err.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {};
    return errorResponse(c, err.status as ContentfulStatusCode, err.message, headers);
  }
  if (err instanceof UnknownCursorError) {
    const detail = [{ type: 'value_error', loc: ['query', 'after'], msg: err.message, input: err.cursor, ctx: {} }];
    return c.json({ detail }, 422);
  }
  if (err instanceof StorageQuotaError) return errorResponse(c, 507, err.message);
  if (err instanceof HTTPException) return errorResponse(c, err.status as ContentfulStatusCode, err.message);
  if (closedForUpgrade(c.get('deps')?.services.db)) {
    return errorResponse(c, 503, 'A newer version of Hearth upgraded its database in another tab: reload this tab.');
  }
  console.error(`[hearth] request ${c.get('requestId') ?? '?'} ${c.req.method} ${c.req.path} failed:`, err);
  return errorResponse(c, 500, `Internal error (request ${c.get('requestId') ?? 'unknown'}): ${err.message}`);
}
