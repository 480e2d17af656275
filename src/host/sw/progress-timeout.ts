/**
 * The Service Worker's progress timeout (issue 10): a request the engine leaves without progress
 * (no response yet, or no new chunk of a streamed body) for PROGRESS_TIMEOUT_MS is answered
 * rather than left hanging: 504 in its family's shape before the response, and for a stream an
 * error event (SSE) or a stream error after it. Either way the engine is told to abort, so the
 * request's batch rows, KV blocks or pending fetch are freed. A client may ask for a shorter
 * timeout for its own request with `X-Hearth-Progress-Timeout: <seconds>` (never longer).
 *
 * Not here: forwarding itself (forward.ts), the engine's own budgets for templates and grammars.
 */
import { errorBody, errorFamily, jsonErrorResponse } from '../../service/error-envelope';

/**
 * Longest time without progress: 5 minutes, so that a long non-streaming completion (which
 * sends nothing until it is done) on a slow adapter is not cut, while a stalled request still ends.
 */
export const PROGRESS_TIMEOUT_MS = 300_000;
export const PROGRESS_TIMEOUT_HEADER = 'X-Hearth-Progress-Timeout';

/** The timeout for `request`: the default, or the shorter one the client asked for. */
export function progressTimeoutFor(request: Request): number {
  const asked = Number(request.headers.get(PROGRESS_TIMEOUT_HEADER));
  return asked > 0 ? Math.min(asked * 1000, PROGRESS_TIMEOUT_MS) : PROGRESS_TIMEOUT_MS;
}

function message(ms: number): string {
  return `The Hearth engine made no progress on this request for ${ms / 1000} s, so it was stopped; retry it, or make it smaller.`;
}

/** The 504 answered when no response came within `ms`. */
export function timedOut(path: string, ms: number): Response {
  return jsonErrorResponse(path, 504, message(ms));
}

/** Resolves after `ms` unless `stop()` ran first. */
export function progressTimer(ms: number): { expired: Promise<void>; stop(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { expired, stop: () => clearTimeout(timer) };
}

/**
 * `source` passed through, ended when no chunk arrives for `ms`: an SSE stream gets an error
 * event in its family's shape and `[DONE]` (what a client of a streamed chat reads), any other
 * stream errors. `source` is cancelled then, which aborts the request in the engine.
 */
export function withChunkTimeout(source: ReadableStream<Uint8Array>, ms: number, path: string, sse: boolean): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const timer = progressTimer(ms);
      const next = await Promise.race([reader.read(), timer.expired.then(() => 'stalled' as const)]);
      timer.stop();
      if (next === 'stalled') {
        reader.cancel(new DOMException(message(ms), 'TimeoutError')).catch(() => undefined);
        if (!sse) return controller.error(new DOMException(message(ms), 'TimeoutError'));
        controller.enqueue(
          new TextEncoder().encode(`data: ${JSON.stringify(errorBody(errorFamily(path), 504, message(ms)))}\n\ndata: [DONE]\n\n`),
        );
        return controller.close();
      }
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
