/**
 * The request and response as they cross from the Service Worker to the engine worker: plain
 * structured-cloneable objects. The request body travels as a transferred ArrayBuffer; the
 * response body as a transferred ReadableStream, so a streamed response (SSE) arrives chunk by
 * chunk instead of after the whole body is ready.
 *
 * Not here: the ports themselves (sw/engine-link.ts, engine-host.ts).
 */
import { readCapped } from '../service/capped-read';

export interface WireRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body: ArrayBuffer | null;
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

/** A request body over its route's cap (`toWireRequest` stopped reading at the cap). */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
  constructor(readonly cap: number) {
    super(`The request body is larger than ${cap} bytes.`);
  }
}

/**
 * The request as it crosses to the engine. Its body is read with a byte counter and cut at `cap`
 * (issue 10, item 6): a declared Content-Length over the cap fails before reading, and a longer
 * stream is cancelled at the cap instead of being buffered whole.
 */
export async function toWireRequest(req: Request, cap = Infinity): Promise<WireRequest> {
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.body !== null;
  const declared = req.headers.get('Content-Length');
  if (hasBody && declared !== null && Number(declared) > cap) throw new BodyTooLargeError(cap);
  const bytes = hasBody ? await readCapped(req.body, cap, declared === null ? undefined : Number(declared)) : null;
  if (bytes === undefined) throw new BodyTooLargeError(cap);
  // readCapped's array owns its whole buffer, so the buffer is transferred without a copy.
  const body = bytes && bytes.byteLength > 0 ? (bytes.buffer as ArrayBuffer) : null;
  return { method: req.method, url: req.url, headers: [...req.headers], body };
}

export function fromWireRequest(w: WireRequest, signal?: AbortSignal): Request {
  return new Request(w.url, { method: w.method, headers: w.headers, body: w.body, signal });
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
