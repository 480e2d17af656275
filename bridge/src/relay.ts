/**
 * One HTTP request relayed to the tab and its response back: method, path with query and headers
 * (Authorization untouched) go as a `request` message, the body follows in credit-windowed
 * frames and stops just past its route's cap (so the app's own count answers 413, as for a page),
 * and the response streams back chunk by chunk. A client that leaves aborts the request in the
 * tab; a tab that leaves ends the request with a 503 (or, once a stream has begun, an SSE error
 * event and `[DONE]`, or a cut connection for other bodies) instead of leaving it hanging.
 *
 * Not here: which requests get relayed at all (server.ts), the socket (tab-channel.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyCapFor } from '../../src/api/body-limits';
import { errorBody, errorFamily } from '../../src/service/error-envelope';
import { CreditWindow, type HeaderList } from './protocol';
import type { RelayEndpoint, TabSession } from './tab-channel';

/** Largest body piece per frame. */
const PIECE_BYTES = 256 * 1024;

/** Request headers that describe this hop, not the request: the tab's fetch sets its own. */
const HOP_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
  'origin',
  'referer',
  'cookie',
  'accept-encoding',
]);
/** Response headers Node writes itself for the chunked body it sends. */
const HOP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

/** The client's headers as the tab should send them (repeated headers kept in order). */
export function forwardedRequestHeaders(rawHeaders: readonly string[]): HeaderList {
  const out: HeaderList = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (!HOP_REQUEST.has(rawHeaders[i].toLowerCase())) out.push([rawHeaders[i], rawHeaders[i + 1]]);
  return out;
}

/** A JSON error in the family `path` answers in (Hearth's own envelopes). */
export function sendError(res: ServerResponse, path: string, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(errorBody(errorFamily(path), status, message));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export class Relay implements RelayEndpoint {
  private headSent = false;
  private done = false;
  private sse = false;
  /** The last two bytes written, to start an error event on an event boundary. */
  private tail = '';
  private readonly window = new CreditWindow();
  private readonly path: string;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly session: TabSession,
    private readonly id: number,
    /** What a 503 says once the tab left. */
    private readonly goneMessage: string,
  ) {
    this.path = new URL(req.url ?? '/', 'http://bridge').pathname;
  }

  start(): void {
    const { req, res } = this;
    const hasBody =
      req.method !== 'GET' &&
      req.method !== 'HEAD' &&
      (Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined);
    this.session.relays.set(this.id, this);
    this.session.send({
      type: 'request',
      id: this.id,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: forwardedRequestHeaders(req.rawHeaders),
      body: hasBody,
    });
    res.on('close', () => {
      if (this.done) return;
      // The client went away before the response ended: the tab aborts its fetch.
      this.finish();
      this.session.send({ type: 'abort', id: this.id });
    });
    if (hasBody) void this.pumpBody(bodyCapFor(this.path));
    else req.resume();
  }

  /** Sends the body in windowed pieces, at most `cap` + 1 bytes: one past the cap is enough for the app to answer 413. */
  private async pumpBody(cap: number): Promise<void> {
    let sent = 0;
    try {
      for await (const chunk of this.req as AsyncIterable<Buffer>) {
        if (this.done || sent > cap) continue; // drained, not sent: the response may already be on its way
        const piece = chunk.subarray(0, cap + 1 - sent);
        for (let at = 0; at < piece.length; at += PIECE_BYTES) {
          const slice = piece.subarray(at, at + PIECE_BYTES);
          await this.window.reserve(slice.length);
          if (this.done) break;
          this.session.sendChunk(this.id, slice);
        }
        sent += piece.length;
        if (sent > cap && !this.done) this.session.send({ type: 'end', id: this.id });
      }
      if (sent <= cap && !this.done) this.session.send({ type: 'end', id: this.id });
    } catch {
      // The client's connection broke; `close` aborts the request in the tab.
    }
  }

  onAck(bytes: number): void {
    this.window.ack(bytes);
  }

  onHead(status: number, headers: HeaderList): void {
    if (this.done || this.headSent) return;
    this.headSent = true;
    const out: [string, string][] = headers.filter(([k]) => !HOP_RESPONSE.has(k.toLowerCase()));
    this.sse = headers.some(([k, v]) => k.toLowerCase() === 'content-type' && v.toLowerCase().startsWith('text/event-stream'));
    this.res.writeHead(status, out.flat());
    this.res.flushHeaders();
  }

  onChunk(bytes: Uint8Array): void {
    if (this.done || !this.headSent) return;
    const n = bytes.byteLength;
    if (this.sse && n) this.tail = (this.tail + Buffer.from(bytes.subarray(Math.max(0, n - 2))).toString('latin1')).slice(-2);
    // Credit goes back once the client's socket took the bytes: a slow reader slows the tab.
    this.res.write(bytes, () => this.session.send({ type: 'ack', id: this.id, bytes: n }));
  }

  onEnd(): void {
    if (this.done) return;
    this.finish();
    if (!this.headSent) return sendError(this.res, this.path, 502, 'The Hearth tab ended the response before it began.');
    this.res.end();
  }

  onFail(message: string): void {
    this.endWithError(502, `The Hearth tab could not complete the request: ${message}`);
  }

  onTabGone(): void {
    this.endWithError(503, this.goneMessage, { 'Retry-After': '2' });
  }

  /** Before the response: a JSON error. In an SSE stream: an error event and `[DONE]`. Else: a cut body. */
  private endWithError(status: number, message: string, headers: Record<string, string> = {}): void {
    if (this.done) return;
    this.finish();
    if (!this.headSent) return sendError(this.res, this.path, status, message, headers);
    if (this.sse) {
      // What the app's Service Worker writes when a stream stops mid-way, on an event boundary.
      const gap = this.tail === '\n\n' ? '' : '\n\n';
      this.res.end(`${gap}data: ${JSON.stringify(errorBody(errorFamily(this.path), status, message))}\n\ndata: [DONE]\n\n`);
      return;
    }
    // A cut body: the client sees the connection end without the chunked terminator, an error.
    this.res.destroy();
  }

  private finish(): void {
    this.done = true;
    this.window.close();
    this.session.relays.delete(this.id);
  }
}
