/**
 * Forwarding one /v1 request from the Service Worker to the engine and its response back.
 * Never hangs: with no engine host within the wait it answers 503; if the hosting tab dies
 * while the request is in flight, the request answers 503 (or, mid-stream, the body errors).
 *
 * Not here: finding the engine (engine-link.ts).
 */
import { fromWireResponse, toWireRequest, type WireResponse } from '../wire';
import type { EngineLink, Link } from './engine-link';

/** How long a request waits for an engine host before it gets 503. */
export const HOST_WAIT_MS = 6_000;
/** How often an in-flight request checks that its host tab still exists. */
const LIVENESS_MS = 500;

function unavailable(message: string, chat: boolean): Response {
  const body = chat
    ? { error: { message, type: 'ServiceUnavailableError', param: null, code: 503 } }
    : { detail: message };
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { 'Content-Type': 'application/json', 'Retry-After': '2' },
  });
}

const NO_HOST =
  'No Hearth engine is running: open the Hearth app in a tab of this browser (one tab hosts the engine) and retry.';
const HOST_DIED = 'The tab hosting the Hearth engine closed while this request was being handled; retry the request.';

/** Resolves when `link`'s host tab is gone; `stop()` ends the watch. */
function watchHost(links: EngineLink, link: Link): { gone: Promise<void>; stop(): void } {
  let timer: ReturnType<typeof setInterval> | undefined;
  const gone = new Promise<void>((resolve) => {
    timer = setInterval(async () => {
      if (!(await links.isAlive(link))) {
        links.drop(link);
        resolve();
      }
    }, LIVENESS_MS);
  });
  return { gone, stop: () => clearInterval(timer) };
}

export async function forward(links: EngineLink, request: Request): Promise<Response> {
  const chat = !new URL(request.url).pathname.startsWith('/v1/preview');
  const wire = await toWireRequest(request);
  const link = await links.get(HOST_WAIT_MS);
  if (!link) return unavailable(NO_HOST, chat);

  const watch = watchHost(links, link);
  const handled = link.api.handle(wire).then((r) => r as WireResponse);
  let winner: WireResponse | undefined;
  try {
    winner = await Promise.race([handled, watch.gone.then(() => undefined)]);
  } catch (err) {
    watch.stop();
    return unavailable(`The Hearth engine could not handle the request: ${err instanceof Error ? err.message : String(err)}`, chat);
  }
  if (!winner) {
    watch.stop();
    handled.catch(() => undefined);
    return unavailable(HOST_DIED, chat);
  }
  if (!winner.body) {
    watch.stop();
    return fromWireResponse(winner);
  }
  return fromWireResponse(winner, guardStream(winner.body, watch));
}

/** Passes the engine's stream through, erroring it if the host dies before it ends. */
function guardStream(source: ReadableStream<Uint8Array>, watch: { gone: Promise<void>; stop(): void }): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let finished = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      void watch.gone.then(() => {
        if (finished) return;
        finished = true;
        controller.error(new Error(HOST_DIED));
        reader.cancel().catch(() => undefined);
      });
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (finished) return;
        if (done) {
          finished = true;
          watch.stop();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (err) {
        if (finished) return;
        finished = true;
        watch.stop();
        controller.error(err);
      }
    },
    cancel(reason) {
      finished = true;
      watch.stop();
      return reader.cancel(reason);
    },
  });
}
