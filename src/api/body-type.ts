/**
 * The refusals of a request body that come before any schema runs, one rule each in both route
 * families: a Content-Type other than the route's is 415 (vLLM's and FastAPI's status; vLLM's
 * text on OpenAI paths), and a JSON body that does not parse is pydantic's `json_invalid`
 * validation error (400 in vLLM's envelope, 422 in the preview family's). Hono's own validator
 * would silently validate `{}` for a non-JSON content type, hence the check first.
 *
 * Not here: the envelopes (service/error-envelope.ts), schema errors (validation.ts).
 * Reference: docs/reference/vllm-chat.md §1.1; docs/errors.md.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { errorFamily } from '../service/error-envelope';
import type { AppEnv } from './env';
import { validationResponse } from './errors';

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/;

/** The request's media type: the Content-Type without parameters, lower-cased ("" when absent). */
export function mediaType(c: Context): string {
  return (c.req.header('Content-Type') ?? '').split(';')[0].trim().toLowerCase();
}

/** Whether the request's body is declared JSON (`application/json` or any `+json` type). */
export function isJsonBody(c: Context): boolean {
  return JSON_TYPE.test(mediaType(c));
}

/** Throws the 415 refusal unless the body's media type is `expected` (any `+json` type for JSON). */
export function requireMediaType(c: Context, expected: 'application/json' | 'multipart/form-data'): void {
  const got = mediaType(c);
  if (expected === 'application/json' ? JSON_TYPE.test(got) : got === expected) return;
  const message =
    errorFamily(c.req.path) === 'openai'
      ? `Unsupported Media Type: Only '${expected}' is allowed`
      : `Content-Type must be ${expected} (got ${got ? `"${got}"` : 'none'}).`;
  throw new HTTPException(415, { message });
}

/** Refuses a body that is not well-formed JSON before any validator runs. */
export function requireJsonBody(): MiddlewareHandler<AppEnv> {
  return async function requireJsonBody(c, next) {
    requireMediaType(c, 'application/json');
    try {
      JSON.parse(await c.req.text());
    } catch (err) {
      return validationResponse(c, [
        { type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: (err as Error).message } },
      ]);
    }
    await next();
  };
}
