// A Hugging Face-style mirror for e2e tests: an HTTP server on another origin than the app (CORS
// open, preflights answered) whose handler serves `/{org}/{name}/resolve/{revision}/{file}` as
// each test needs (stalls, drops, byte ranges), and a poll helper for the background downloads.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface MirrorServer {
  url: string;
  close: () => Promise<void>;
}

/** Every file's ETag: a resume's `If-Range` with another value gets the whole file again. */
export const ETAG = '"v1"';

/**
 * Writes the status and headers for the part of a `size`-byte file that `req` asks for
 * (`Range: bytes=a-` or `bytes=a-b`, honoured while `If-Range` matches): 206 with Content-Range,
 * else 200. Returns the byte range [start, end) the body must carry.
 */
export function writeRangeHead(req: IncomingMessage, res: ServerResponse, size: number): { start: number; end: number } {
  const r = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  const ranged = !!r && (req.headers['if-range'] ?? ETAG) === ETAG;
  const start = ranged ? Number(r[1]) : 0;
  const end = ranged && r[2] ? Math.min(Number(r[2]) + 1, size) : size;
  const headers: Record<string, string> = { ETag: ETAG, 'Content-Length': String(end - start), 'Content-Type': 'application/octet-stream' };
  if (ranged) headers['Content-Range'] = `bytes ${start}-${end - 1}/${size}`;
  res.writeHead(ranged ? 206 : 200, headers);
  return { start, end };
}

/** Starts `handle` on a free 127.0.0.1 port behind the CORS headers a cross-origin download needs. */
export async function serveMirror(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<MirrorServer> {
  const server: Server = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, ETag, Content-Length');
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    handle(req, res);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** Polls `probe` every 200 ms until it gives a value; on timeout, the error says `state()`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  state: () => Promise<string>,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}: ${await state()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
