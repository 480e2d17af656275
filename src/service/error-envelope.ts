/**
 * Hearth's two error envelopes and the one rule that picks between them. Every error body
 * Hearth sends is built here: by the API's error handler and validators (src/api), by the chat
 * service for an error inside a stream, by the engine worker when it failed to boot, and by the
 * Service Worker when no engine answers.
 *
 * - The OpenAI family (`/v1/chat/*`, `/v1/models`, any other `/v1` path outside the preview
 *   prefix): vLLM's `{"error": {"message", "type", "param", "code"}}`; invalid input is a 400
 *   whose message is FastAPI's validation text, as vLLM's RequestValidationError handler writes it.
 * - The preview family (`/v1/preview` and below): FastAPI's `{"detail": "..."}`, and 422
 *   `{"detail": [{"type", "loc", "msg", "input", "ctx"}]}` for invalid input.
 *
 * Dependency-free on purpose (no hono, no zod): the Service Worker bundle imports it. It lives in
 * src/service, the lowest layer every user of it may import (api -> service; host -> anything).
 * Not here: which error has which status (src/api/errors.ts maps the named errors), zod issues to
 * detail items (src/api/validation.ts).
 * Reference: docs/design.md "Errors"; docs/reference/vllm-chat.md §1.1 (envelope, type names, validation text);
 * FastAPI's default exception handlers (HTTPException, RequestValidationError).
 */
import { pyRepr, pyStr } from './chat/py-format';

export type ErrorFamily = 'openai' | 'preview';

const PREVIEW_PREFIX = '/v1/preview';

/** The family a request path answers errors in: the preview prefix, or else OpenAI's. */
export function errorFamily(path: string): ErrorFamily {
  return path === PREVIEW_PREFIX || path.startsWith(`${PREVIEW_PREFIX}/`) ? 'preview' : 'openai';
}

/** One FastAPI/pydantic validation error item. */
export interface ValidationDetail {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx: Record<string, unknown>;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

export type PreviewErrorBody = { detail: string } | { detail: ValidationDetail[] };

export type ErrorBody = OpenAIErrorBody | PreviewErrorBody;

/**
 * vLLM's `type` by status (its serving layer's names), and for the statuses vLLM never sends the
 * name of the openai client's error class for that status, so a client reads one vocabulary.
 */
const OPENAI_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  409: 'ConflictError',
  413: 'BadRequestError',
  415: 'BadRequestError',
  422: 'UnprocessableEntityError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
  504: 'GatewayTimeoutError',
  507: 'InsufficientStorageError',
};

/** vLLM's envelope; `param` names the request field at fault when there is one. */
export function openaiError(
  status: number,
  message: string,
  param: string | null = null,
  type = OPENAI_TYPES[status] ?? 'Error',
): OpenAIErrorBody {
  return { error: { message, type, param, code: status } };
}

/** An error body for `status` in `family`. */
export function errorBody(family: ErrorFamily, status: number, message: string, param: string | null = null): ErrorBody {
  return family === 'openai' ? openaiError(status, message, param) : { detail: message };
}

function detailRepr(d: ValidationDetail): string {
  const loc = `(${d.loc.map((p) => (typeof p === 'number' ? String(p) : pyStr(p))).join(', ')}${d.loc.length === 1 ? ',' : ''})`;
  const ctx = Object.keys(d.ctx).length ? `, 'ctx': ${pyRepr(d.ctx)}` : '';
  return `{'type': ${pyStr(d.type)}, 'loc': ${loc}, 'msg': ${pyStr(d.msg)}, 'input': ${pyRepr(d.input)}${ctx}}`;
}

/** FastAPI's RequestValidationError text ("1 validation error:\n  {'type': ...}\n"). */
export function validationMessage(details: readonly ValidationDetail[]): string {
  const lines = details.map((d) => `  ${detailRepr(d)}\n`).join('');
  return `${details.length} validation error${details.length === 1 ? '' : 's'}:\n${lines}`;
}

/**
 * Invalid input in `family`'s shape: preview answers FastAPI's 422 detail list; OpenAI paths
 * answer vLLM's 400 with FastAPI's text, `type` "Bad Request" (the status phrase vLLM's handler
 * uses) and `param` the first item's location without the leading "body".
 */
export function validationError(family: ErrorFamily, details: readonly ValidationDetail[]): { status: 400 | 422; body: ErrorBody } {
  if (family === 'preview') return { status: 422, body: { detail: [...details] } };
  const param = details[0]?.loc.filter((p, i) => !(i === 0 && p === 'body')).join('.') || null;
  return { status: 400, body: openaiError(400, validationMessage(details), param, 'Bad Request') };
}

/** A standalone JSON error Response for `path`'s family (for code outside the Hono app). */
export function jsonErrorResponse(path: string, status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorBody(errorFamily(path), status, message)), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}
