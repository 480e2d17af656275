/**
 * The playground's client for streamed chat completions: POST /v1/chat/completions with
 * `stream: true` through the Service Worker, read as Server-Sent Events, one parsed chunk at a
 * time. Aborting the signal closes the stream, which frees the request's batch slot in the engine.
 * An error answer (or an error event inside the stream) throws with the server's message.
 *
 * Not here: rendering (chat-playground.ts); the SSE parsing (sse.ts); HTTP semantics (src/api).
 * The UI is just a client.
 */
import { ApiError, apiError } from './api-client';
import { sseData } from './sse';

export interface ChatChunkLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number }[];
}

export interface ChatChunk {
  choices: {
    index: number;
    delta: { role?: string; content?: string | null; reasoning_content?: string | null };
    logprobs: { content: ChatChunkLogprob[] } | null;
    finish_reason: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  error?: { message: string };
}

/** Streams the chunks of one chat completion request (`stream` is forced on). */
export async function* streamChat(body: Record<string, unknown>, signal: AbortSignal): AsyncGenerator<ChatChunk> {
  await globalThis.hearth.ready();
  const key = await globalThis.hearth.adminKey();
  const res = await fetch('/v1/chat/completions', {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (!res.ok || !res.body) throw await apiError(res);
  for await (const data of sseData(res.body)) {
    if (data === '[DONE]') return;
    const chunk = JSON.parse(data) as ChatChunk;
    if (chunk.error) throw new ApiError(500, chunk.error.message);
    yield chunk;
  }
}
