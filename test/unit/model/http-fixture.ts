// A small HTTP file server on 127.0.0.1 for download tests, with the behaviours a real CDN or a
// flaky network shows: byte ranges with Content-Range and a strong ETag, If-Range, servers that
// ignore ranges, connections that drop mid-body, slow bodies, 404 and 401. Every request is logged.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedFile {
  body: Uint8Array;
  etag: string;
}

export interface RequestLog {
  path: string;
  range: string | null;
  ifRange: string | null;
  ifNoneMatch: string | null;
  status?: number;
}

export class FileServer {
  readonly files = new Map<string, ServedFile>();
  readonly log: RequestLog[] = [];
  /** Drop the connection after this many body bytes, for the next `dropCount` responses. */
  dropAfter = 0;
  dropCount = 0;
  /** Only responses for paths ending with this are dropped (default: any). */
  dropPath = '';
  /** Answer 200 with the whole file even when a range is asked. */
  ignoreRange = false;
  /** Bytes per write and pause between writes (a slow body gives several progress events). */
  writeBytes = 1 << 20;
  writeDelayMs = 0;
  /** Answer cross-origin requests (a page of another origin downloading, as from huggingface.co). */
  cors = false;
  /** Paths answered 401 (private or gated repositories). */
  readonly unauthorized = new Set<string>();
  private server!: Server;
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  put(path: string, body: Uint8Array, etag = `"${path}-${body.byteLength}"`): void {
    this.files.set(path, { body, etag });
  }

  requestsFor(path: string): RequestLog[] {
    return this.log.filter((r) => r.path === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = decodeURIComponent(new URL(req.url!, this.base).pathname);
    const range = req.headers.range ?? null;
    const ifRange = (req.headers['if-range'] as string | undefined) ?? null;
    if (this.cors) {
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, ETag, Accept-Ranges');
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { 'Access-Control-Allow-Headers': 'Range, If-Range', 'Access-Control-Allow-Methods': 'GET' }).end();
        return;
      }
    }
    const ifNoneMatch = req.headers['if-none-match'] ?? null;
    const entry: RequestLog = { path, range, ifRange, ifNoneMatch };
    this.log.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    if ([...this.unauthorized].some((p) => path.startsWith(p))) {
      res.writeHead(401).end('unauthorized');
      return;
    }
    const file = this.files.get(path);
    if (!file) {
      res.writeHead(404).end('not found');
      return;
    }
    if (ifNoneMatch === file.etag) {
      res.writeHead(304, { ETag: file.etag }).end();
      return;
    }
    let start = 0;
    const m = range?.match(/^bytes=(\d+)-$/);
    const rangeValid = m && !this.ignoreRange && (ifRange === null || ifRange === file.etag);
    if (rangeValid) {
      start = Number(m[1]);
      if (start >= file.body.byteLength) {
        res.writeHead(416, { 'Content-Range': `bytes */${file.body.byteLength}` }).end();
        return;
      }
      res.writeHead(206, {
        'Content-Length': file.body.byteLength - start,
        'Content-Range': `bytes ${start}-${file.body.byteLength - 1}/${file.body.byteLength}`,
        ETag: file.etag,
        'Accept-Ranges': 'bytes',
      });
    } else {
      res.writeHead(200, { 'Content-Length': file.body.byteLength, ETag: file.etag, 'Accept-Ranges': 'bytes' });
    }
    const body = file.body.subarray(start);
    const dropping = this.dropCount > 0 && path.endsWith(this.dropPath);
    const drop = dropping ? this.dropAfter : Infinity;
    if (dropping) this.dropCount--;
    let sent = 0;
    while (sent < body.byteLength) {
      const end = Math.min(body.byteLength, sent + this.writeBytes, drop);
      if (end > sent) res.write(body.subarray(sent, end));
      sent = end;
      if (sent >= drop) {
        // Give the bytes a moment to leave, then cut the connection mid-body.
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        return;
      }
      if (this.writeDelayMs) await new Promise((r) => setTimeout(r, this.writeDelayMs));
    }
    res.end();
  }
}

/** Deterministic bytes of a given length. */
export function patternBytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}
