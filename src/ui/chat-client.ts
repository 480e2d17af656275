/**
 * The playground's client for streamed chat completions: POST /v1/chat/completions with
 * `stream: true` through the Service Worker, read as Server-Sent Events, one parsed chunk at a
 * time. Aborting the signal closes the stream, which frees the request's batch slot in the engine.
 * An error answer (or an error event inside the stream) throws with the server's message.
 *
 * Not here: rendering (chat-playground.ts); HTTP semantics (src/api). The UI is just a client.
 */
import { ApiError } from './api-client';

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

function errorText(body: unknown, status: number): string {
  const b = body as { error?: { message?: string }; detail?: unknown } | null;
  if (b?.error?.message) return b.error.message;
  if (typeof b?.detail === 'string') return b.detail;
  return `HTTP ${status}`;
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
  if (!res.ok || !res.body) throw new ApiError(res.status, errorText(await res.json().catch(() => null), res.status));
  const decoder = new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>;
  const reader = res.body.pipeThrough(decoder).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (!data) continue;
        if (data === '[DONE]') return;
        const chunk = JSON.parse(data) as ChatChunk;
        if (chunk.error) throw new ApiError(500, chunk.error.message);
        yield chunk;
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
