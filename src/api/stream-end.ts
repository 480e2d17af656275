/**
 * A response body passed through with a hook on its end, for middleware that holds something
 * while a stream (SSE) is open: `onEnd` runs once when the body ends, errors or is cancelled (the
 * client went away), and `stop`, when it aborts, ends the body at once with its reason and
 * cancels the source (which aborts the handler's work: Hono's `stream.onAbort`).
 *
 * Not here: what is held (chat-concurrency.ts, open-requests.ts).
 */

import type { Context, Next } from 'hono';

function isEventStream(res: Response): boolean {
  return res.body !== null && (res.headers.get('Content-Type') ?? '').startsWith('text/event-stream');
}

/**
 * Runs the rest of the chain and calls `release` when the answer is complete: at once for a
 * plain body or an error, when the stream ends for SSE (ended early when `stop` aborts).
 */
export async function holdUntilAnswered(c: Context, next: Next, release: () => void, stop?: AbortSignal): Promise<void> {
  try {
    await next();
  } catch (err) {
    release();
    throw err;
  }
  if (!isEventStream(c.res)) return release();
  c.res = new Response(untilEnd(c.res.body!, release, stop), c.res);
}

function untilEnd(source: ReadableStream<Uint8Array>, onEnd: () => void, stop?: AbortSignal): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let ended = false;
  const end = () => {
    if (ended) return false;
    ended = true;
    onEnd();
    return true;
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      stop?.addEventListener(
        'abort',
        () => {
          if (!end()) return;
          controller.error(stop.reason);
          reader.cancel(stop.reason).catch(() => undefined);
        },
        { once: true },
      );
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (ended) return;
        if (done) {
          end();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (err) {
        if (!end()) return;
        controller.error(err);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
}
