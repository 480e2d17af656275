/**
 * The app's one error handler and its one way to answer an error: each named error has its
 * status, and the body takes the envelope of the route family the path belongs to (the rule and
 * both envelopes are in service/error-envelope.ts). An unexpected error is a 500 logged with the
 * request id.
 *
 * Not here: the envelopes themselves (service/error-envelope.ts), zod issues to detail items
 * (validation.ts). Reference: docs/design.md "Errors"; docs/errors.md.
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { errorBody, errorFamily, validationError, type ValidationDetail } from '../service/error-envelope';
import { ConcurrencyLimitError, HearthError, InvalidInputError } from '../service/errors';
import { StoreNotFoundError } from '../store/errors';
import { UnknownCursorError } from '../store/page';
import { closedForUpgrade } from '../store/open-db';
import { StorageQuotaError } from '../store/tx';
import type { AppEnv } from './env';

/** One error body in the envelope of the family `c`'s path belongs to. */
export function errorResponse(
  c: Context,
  status: ContentfulStatusCode,
  message: string,
  headers: Record<string, string> = {},
  param: string | null = null,
): Response {
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  return c.json(errorBody(errorFamily(c.req.path), status, message, param), status);
}

/** Invalid input in the family's validation shape (422 detail list, or vLLM's 400). */
export function validationResponse(c: Context, details: readonly ValidationDetail[]): Response {
  const { status, body } = validationError(errorFamily(c.req.path), details);
  return c.json(body, status);
}

export function onError(err: Error, c: Context<AppEnv>): Response {
  if (err instanceof InvalidInputError) {
    return validationResponse(c, [{ type: err.type, loc: err.loc, msg: err.message, input: err.input, ctx: err.ctx }]);
  }
  if (err instanceof HearthError) {
    const headers: Record<string, string> =
      err.status === 401
        ? { 'WWW-Authenticate': 'Bearer' }
        : err instanceof ConcurrencyLimitError
          ? { 'Retry-After': String(err.retryAfter) }
          : {};
    // A chat error names the request field at fault (vLLM's `param`).
    const param = 'param' in err && typeof err.param === 'string' ? err.param : null;
    return errorResponse(c, err.status as ContentfulStatusCode, err.message, headers, param);
  }
  if (err instanceof UnknownCursorError) {
    return validationResponse(c, [{ type: 'value_error', loc: ['query', 'after'], msg: err.message, input: err.cursor, ctx: {} }]);
  }
  if (err instanceof StoreNotFoundError) return errorResponse(c, 404, err.message);
  if (err instanceof StorageQuotaError) return errorResponse(c, 507, err.message);
  if (err instanceof HTTPException) return errorResponse(c, err.status, err.message);
  if (closedForUpgrade(c.get('deps')?.services.db)) {
    return errorResponse(c, 503, 'A newer version of Hearth upgraded its database in another tab: reload this tab.');
  }
  console.error(`[hearth] request ${c.get('requestId') ?? '?'} ${c.req.method} ${c.req.path} failed:`, err);
  return errorResponse(c, 500, `Internal error (request ${c.get('requestId') ?? 'unknown'}): ${err.message}`);
}
