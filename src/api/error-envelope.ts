/**
 * The error body of each route family, as plain data, for code that answers without a Hono
 * context (the Service Worker's 413 and 504, src/host/sw/forward.ts): /v1/preview answers
 * FastAPI-style `{"detail": "..."}`, /v1/chat vLLM's `{"error": {"message", "type", "param", "code"}}`.
 * No imports: the Service Worker bundles this file.
 *
 * Not here: the app's error handler (errors.ts), 422 bodies (validation.ts).
 */

/** vLLM's `type` names by status (reference/vllm-chat.md §1.1). */
export const VLLM_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  413: 'BadRequestError',
  415: 'BadRequestError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
  504: 'TimeoutError',
};

export function isChatPath(path: string): boolean {
  return !path.startsWith('/v1/preview');
}

/** One error body in the envelope of the family `path` belongs to. */
export function errorEnvelope(path: string, status: number, message: string): object {
  if (isChatPath(path)) return { error: { message, type: VLLM_TYPES[status] ?? 'Error', param: null, code: status } };
  return { detail: message };
}

/** The same as a JSON Response (for code without a Hono context). */
export function errorEnvelopeResponse(path: string, status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorEnvelope(path, status, message)), { status, headers: { 'Content-Type': 'application/json', ...headers } });
}
