/**
 * Request validation for /v1/chat: the body must be JSON (415 otherwise, 400 when malformed),
 * the seed is read exactly from the raw text, and the chat request schema runs; a failure is
 * vLLM's 400 `{"error": {"message", "type": "Bad Request", "param", "code": 400}}` whose message
 * is FastAPI's text for the pydantic errors ("1 validation error:\n  {'type': 'int_parsing',
 * 'loc': ('body', 'n'), ...}"), so clients that grep for pydantic's error types find them.
 *
 * Not here: the schema (chat-request.ts), the rules checked after parsing (service/chat/check.ts).
 * Reference: vllm-chat.md §1.1 (validation errors are 400 with the vLLM envelope).
 */
import type { Context, MiddlewareHandler } from 'hono';
import { validator } from 'hono/validator';
import { pyRepr, pyStr } from '../../service/chat/py-format';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import { issuesToDetails, type ValidationDetail } from '../validation';
import { withExactSeed } from './chat-json';
import { ChatCompletionRequest } from './chat-request';

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;

function detailRepr(d: ValidationDetail): string {
  const loc = `(${d.loc.map((p) => (typeof p === 'number' ? String(p) : pyStr(p))).join(', ')}${d.loc.length === 1 ? ',' : ''})`;
  const ctx = Object.keys(d.ctx).length ? `, 'ctx': ${pyRepr(d.ctx)}` : '';
  return `{'type': ${pyStr(d.type)}, 'loc': ${loc}, 'msg': ${pyStr(d.msg)}, 'input': ${pyRepr(d.input)}${ctx}}`;
}

/** FastAPI's RequestValidationError text. */
export function validationMessage(details: readonly ValidationDetail[]): string {
  const lines = details.map((d) => `  ${detailRepr(d)}\n`).join('');
  return `${details.length} validation error${details.length === 1 ? '' : 's'}:\n${lines}`;
}

export function validationError(c: Context, details: readonly ValidationDetail[]): Response {
  const first = details[0]?.loc.filter((p, i) => !(i === 0 && p === 'body')).join('.') || null;
  return c.json({ error: { message: validationMessage(details), type: 'Bad Request', param: first, code: 400 } }, 400);
}

/** Refuses bodies that are not well-formed JSON before the schema runs. */
export function requireChatJson(): MiddlewareHandler<AppEnv> {
  return async function requireChatJson(c, next) {
    const mediaType = (c.req.header('Content-Type') ?? '').split(';')[0].trim();
    if (!JSON_TYPE.test(mediaType)) {
      return errorResponse(c, 415, "Unsupported Media Type: Only 'application/json' is allowed");
    }
    const text = await c.req.text();
    try {
      JSON.parse(text);
    } catch (err) {
      const detail: ValidationDetail = { type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: (err as Error).message } };
      return validationError(c, [detail]);
    }
    await next();
  };
}

/** Parses the body into the chat service's request, or answers 400. */
export function chatRequestValidator() {
  return validator('json', async (value, c) => {
    const body = withExactSeed(value, await c.req.text());
    const result = await ChatCompletionRequest.safeParseAsync(body);
    if (!result.success) return validationError(c, issuesToDetails(result.error.issues, body, 'body'));
    return result.data;
  });
}
