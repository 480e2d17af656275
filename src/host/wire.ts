/**
 * The request and response as they cross from the Service Worker to the engine worker: plain
 * structured-cloneable objects. Both bodies travel as transferred ReadableStreams: a streamed
 * response (SSE) arrives chunk by chunk instead of after the whole body is ready, and a request
 * body crosses only as the engine reads it, after authentication and with its route's cap
 * counted while it streams (issue 10, item 6): a refused request's body is never read, and a
 * 2 GiB upload goes to storage without ever being held whole.
 *
 * Not here: the ports themselves (sw/engine-link.ts, engine-host.ts).
 */
import { cappedStream } from '../service/capped-read';

export interface WireRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body: ReadableStream<Uint8Array> | null;
  /**
   * Where the Service Worker says the client gave up (it posts one message when the page aborted
   * its fetch). A non-streaming completion has no response body yet to cancel, so without this
   * the engine would finish generating for nobody. Transferred, not cloned.
   */
  abort?: MessagePort;
}

export interface WireResponse {
  status: number;
  statusText: string;
  headers: [string, string][];
  body: ReadableStream<Uint8Array> | null;
}

/** What the engine worker exposes over each Comlink port. */
export interface EngineApi {
  handle(req: WireRequest): Promise<WireResponse>;
  /** Resolves once the engine has booted (database open, admin key ready). */
  ping(): Promise<{ startedAt: number }>;
  /** The local owner's admin key (never served under /v1). */
  adminKey(): Promise<string>;
}

/** Messages between pages, the Service Worker and the engine worker. */
export const MSG = {
  /** page (engine host) -> SW: here is a port to the engine. */
  enginePort: 'hearth-engine-port',
  /** SW -> pages: I have no engine port (I restarted, or the host left); the host should send one. */
  portWanted: 'hearth-engine-port-wanted',
  /** page (engine host) -> engine worker: serve Comlink on this port. */
  connect: 'hearth-connect',
  /** page -> SW: ping the engine or get the admin key; the answer comes back on the given port. */
  control: 'hearth-control',
} as const;

export type ControlOp = 'ping' | 'admin-key';
export type ControlReply = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * The request as it crosses to the engine, its body a stream the engine pulls from. The stream
 * ends just past `cap` bytes: the chunk that passes the cap still crosses, so that the engine's
 * own count (api/body-stream.ts) answers 413, and nothing after it does.
 */
export function toWireRequest(req: Request, cap = Infinity): WireRequest {
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.body !== null;
  const body = hasBody ? cappedStream(req.body, cap, null) : null;
  return { method: req.method, url: req.url, headers: [...req.headers], body };
}

/**
 * The wire request as the app reads it, and `release()`, called once it is answered: it stops
 * the body's source wherever the app left it (a request refused before its body was read, such
 * as a 401, never has the rest of its body pulled across).
 */
export function fromWireRequest(w: WireRequest, signal?: AbortSignal): { request: Request; release: () => void } {
  const source = w.body?.getReader();
  const body =
    source &&
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await source.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => source.cancel(reason),
    });
  // `duplex` is required for a stream body (the Fetch standard); lib.dom's RequestInit lacks it.
  const init = { method: w.method, headers: w.headers, body, signal, duplex: 'half' } as RequestInit;
  return { request: new Request(w.url, init), release: () => void source?.cancel().catch(() => undefined) };
}

/** An AbortSignal that fires when the Service Worker posts on the request's abort port. */
export function wireAbortSignal(w: WireRequest): AbortSignal | undefined {
  const port = w.abort;
  if (!port) return undefined;
  const controller = new AbortController();
  port.onmessage = () => {
    controller.abort(new DOMException('The client aborted the request.', 'AbortError'));
    port.close();
  };
  return controller.signal;
}

export function toWireResponse(res: Response): WireResponse {
  return { status: res.status, statusText: res.statusText, headers: [...res.headers], body: res.body };
}

/** Statuses whose Response must have a null body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

export function fromWireResponse(w: WireResponse, body: ReadableStream<Uint8Array> | null = w.body): Response {
  return new Response(NULL_BODY.has(w.status) ? null : body, { status: w.status, statusText: w.statusText, headers: w.headers });
}
