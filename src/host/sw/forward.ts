/**
 * Forwarding one /v1 request from the Service Worker to the engine and its response back.
 * Never hangs: with no engine host within the wait it answers 503; if the hosting tab dies
 * while the request is in flight, the request answers 503 (or, mid-stream, the body errors).
 * A client that gives up aborts the request in the engine too: after the response (a stream)
 * by cancelling the body; before it (a non-streaming completion still generating) through the
 * request's abort port, when the requesting tab closes, or when the browser aborts the
 * FetchEvent's `request.signal` (the specification's Handle Fetch; Firefox does, Chromium 156
 * does not, so there an aborted non-streaming fetch in a tab that stays open still runs to its end).
 *
 * A request the engine leaves without progress is answered too (progress-timeout.ts).
 *
 * Not here: finding the engine (engine-link.ts).
 */
import * as Comlink from 'comlink';
import { bodyCapFor } from '../../api/body-limits';
import { jsonErrorResponse } from '../../service/error-envelope';
import { fromWireResponse, toWireRequest, type WireRequest, type WireResponse } from '../wire';
import type { EngineLink, Link } from './engine-link';
import { progressTimeoutFor, progressTimer, timedOut, withChunkTimeout } from './progress-timeout';

/** How long a request waits for an engine host before it gets 503. */
export const HOST_WAIT_MS = 6_000;
/** How often an in-flight request checks that its host tab still exists. */
const LIVENESS_MS = 500;

/** 503 in the request's error family; the client may retry once a tab hosts the engine. */
function unavailable(path: string, message: string): Response {
  return jsonErrorResponse(path, 503, message, { 'Retry-After': '2' });
}

const NO_HOST = 'No Hearth engine is running: open the Hearth app in a tab of this browser (one tab hosts the engine) and retry.';
const HOST_DIED = 'The tab hosting the Hearth engine closed while this request was being handled; retry the request.';

/** Resolves when `link`'s host tab is gone; `stop()` ends the watch. */
function watchHost(links: EngineLink, link: Link): { gone: Promise<void>; stop(): void } {
  let timer: ReturnType<typeof setInterval> | undefined;
  const gone = new Promise<void>((resolve) => {
    timer = setInterval(() => {
      void links.isAlive(link).then((alive) => {
        if (alive) return;
        links.drop(link);
        resolve();
      });
    }, LIVENESS_MS);
  });
  return { gone, stop: () => clearInterval(timer) };
}

/** The client (tab) that made the request, as the FetchEvent names it, and how to tell it still exists. */
export interface Requester {
  clientId: string;
  exists(clientId: string): Promise<boolean>;
}

export async function forward(links: EngineLink, request: Request, requester?: Requester): Promise<Response> {
  const path = new URL(request.url).pathname;
  // The body is not read here: the engine authenticates first, then pulls it with its cap counted.
  const wire = toWireRequest(request, bodyCapFor(path));
  const link = await links.get(HOST_WAIT_MS);
  if (!link) {
    wire.body?.cancel().catch(() => undefined);
    return unavailable(path, NO_HOST);
  }

  const watch = watchHost(links, link);
  const clientGone = abortWhenGone(request.signal, requester);
  const timeoutMs = progressTimeoutFor(request);
  const stalled = new AbortController();
  const abort = withAbortPort(wire, AbortSignal.any([clientGone.signal, stalled.signal]));
  const handled = link.api.handle(abort.wire).then((r) => r);
  // Once the response exists, a client that leaves cancels its body instead; the port is closed
  // so that neither end (each with a listener) outlives the request.
  const settled = () => {
    clientGone.stop();
    abort.close();
  };
  handled.then(settled, settled);
  let winner: WireResponse | undefined | 'stalled';
  const timer = progressTimer(timeoutMs);
  try {
    winner = await Promise.race([handled, watch.gone.then(() => undefined), timer.expired.then(() => 'stalled' as const)]);
  } catch (err) {
    watch.stop();
    return unavailable(path, `The Hearth engine could not handle the request: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    timer.stop();
  }
  if (winner === 'stalled') {
    // No progress: the engine aborts the request, and a response that still comes is dropped.
    watch.stop();
    clientGone.stop();
    stalled.abort();
    handled.then(
      (r) => r.body?.cancel(),
      () => undefined,
    );
    return timedOut(path, timeoutMs);
  }
  if (!winner) {
    watch.stop();
    handled.catch(() => undefined);
    return unavailable(path, HOST_DIED);
  }
  if (!winner.body) {
    watch.stop();
    return fromWireResponse(winner);
  }
  const sse = (new Headers(winner.headers).get('Content-Type') ?? '').startsWith('text/event-stream');
  return fromWireResponse(winner, guardStream(withChunkTimeout(winner.body, timeoutMs, path, sse), watch));
}

/**
 * Aborts when the browser aborts the FetchEvent's request, or when the requesting tab no longer
 * exists (checked every LIVENESS_MS until `stop()`).
 */
function abortWhenGone(requestSignal: AbortSignal, requester: Requester | undefined): { signal: AbortSignal; stop(): void } {
  if (!requester?.clientId) return { signal: requestSignal, stop: () => undefined };
  const controller = new AbortController();
  const timer = setInterval(() => {
    void requester.exists(requester.clientId).then((exists) => {
      if (exists) return;
      clearInterval(timer);
      controller.abort(new DOMException('The tab that made the request closed.', 'AbortError'));
    });
  }, LIVENESS_MS);
  return { signal: AbortSignal.any([requestSignal, controller.signal]), stop: () => clearInterval(timer) };
}

/**
 * Gives the request a port on which the engine hears that the client aborted. The message is
 * sent at most once; after the request finished nobody listens.
 */
function withAbortPort(wire: WireRequest, clientSignal: AbortSignal): { wire: WireRequest; close(): void } {
  const channel = new MessageChannel();
  const tell = () => {
    channel.port1.postMessage('abort');
    channel.port1.close();
  };
  if (clientSignal.aborted) tell();
  else clientSignal.addEventListener('abort', tell, { once: true });
  const transfers: Transferable[] = wire.body ? [channel.port2, wire.body] : [channel.port2];
  return {
    wire: Comlink.transfer({ ...wire, abort: channel.port2 }, transfers),
    close: () => {
      clientSignal.removeEventListener('abort', tell);
      channel.port1.close();
    },
  };
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
