/**
 * Request validation for /v1/chat: the seed is read exactly from the raw text, and the chat
 * request schema runs; a failure is vLLM's 400 `{"error": {"message", "type": "Bad Request",
 * "param", "code": 400}}` whose message is FastAPI's text for the pydantic errors ("1 validation
 * error:\n  {'type': 'int_parsing', 'loc': ('body', 'n'), ...}"), so clients that grep for
 * pydantic's error types find them.
 *
 * Not here: the schema (chat-request.ts), the Content-Type and malformed-JSON refusals
 * (../body-type.ts), the envelope (service/error-envelope.ts), the rules checked after parsing
 * (service/chat/check.ts).
 * Reference: docs/reference/vllm-chat.md §1.1 (validation errors are 400 with the vLLM envelope).
 */
import { validator } from 'hono/validator';
import { validationResponse } from '../errors';
import { issuesToDetails } from '../validation';
import { withExactSeed } from './chat-json';
import { ChatCompletionRequest } from './chat-request';

/** Parses the body into the chat service's request, or answers 400. */
export function chatRequestValidator() {
  return validator('json', async (value, c) => {
    const body = withExactSeed(value, await c.req.text());
    const result = await ChatCompletionRequest.safeParseAsync(body);
    if (!result.success) return validationResponse(c, issuesToDetails(result.error.issues, body, 'body'));
    return result.data;
  });
}
