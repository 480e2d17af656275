/**
 * POST /v1/chat/completions (and `/v1/chat/completions/`): validates the body, makes one service
 * call, and answers the completion as JSON or, with `stream: true`, as Server-Sent Events
 * (`data: <chunk>\n\n` per chunk, then `data: [DONE]\n\n`, as vLLM). Errors found before
 * generation are JSON errors in vLLM's envelope; an error mid-stream is a `data: {"error": ...}`
 * event before `[DONE]`. Closing the stream (the client aborted its fetch) aborts the request in
 * the engine at once.
 *
 * Reference: specification endpoint 1; docs/reference/vllm-chat.md §1, §4.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { createChatCompletion } from '../../service/chat/completions';
import { requireJsonBody } from '../body-type';
import type { AppEnv } from '../env';
import { chatRequestValidator } from '../schemas/chat-validation';

export const chat = new Hono<AppEnv>();

chat.post('/completions', requireJsonBody(), chatRequestValidator(), async (c) => {
  const controller = new AbortController();
  const clientGone = c.req.raw.signal;
  clientGone.addEventListener('abort', () => controller.abort(clientGone.reason), { once: true });
  const req = c.req.valid('json');
  // One batch row per choice (and per beam) counts against the key's cap.
  c.get('chatRows').claim(req.n ?? 1);
  const reply = await createChatCompletion(c.get('deps').services, c.get('principal'), req, {
    signal: controller.signal,
    requestIdHeader: c.req.header('X-Request-Id'),
  });
  if (!reply.stream) return c.json(reply.response);
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => controller.abort(new DOMException('The client closed the stream.', 'AbortError')));
    for await (const chunk of reply.chunks) {
      if (stream.aborted) break;
      await stream.writeSSE({ data: JSON.stringify(chunk) });
    }
    if (!stream.aborted) await stream.writeSSE({ data: '[DONE]' });
  });
});
