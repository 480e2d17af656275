/**
 * Hearth served over real HTTP from Node: the same engine boot as the browser's engine worker
 * (src/host/engine-boot.ts: the Hono app, services, store, job runner, the generation Engine and
 * the GPU training engine on Dawn, which is SwiftShader on a machine without a GPU), with
 * IndexedDB from fake-indexeddb and the bundled models read from public/. The demo training
 * script talks to it only through /v1, as any client would.
 *
 * Not here: the browser path (workers/, src/host/engine-endpoint.ts), what the script does.
 */
import 'fake-indexeddb/auto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Engine } from '../../src/engine/generate/engine';
import { nodeGpu } from '../../src/engine/gpu/node-gpu';
import { BundledSource } from '../../src/engine/model/sources/bundled-source';
import { trainingEngineOver } from '../../src/engine/train/engine';
import { bootEngine } from '../../src/host/engine-boot';

const PUBLIC = fileURLToPath(new URL('../../public/', import.meta.url));

export interface NodeHearth {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  adminKey: string;
  close(): Promise<void>;
}

async function toRequest(req: IncomingMessage, origin: string): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const body = chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
  return new Request(new URL(req.url ?? '/', origin), { method: req.method, headers, body });
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
  res.end();
}

export async function startNodeHearth(options: { dbName?: string; port?: number } = {}): Promise<NodeHearth> {
  // Long keep-alive: a GPU pipeline compiling on SwiftShader can hold the event loop for seconds,
  // and a socket closed by the server while a client reuses it resets the request.
  const server = createServer({ keepAliveTimeout: 120_000 });
  await new Promise<void>((ok) => server.listen(options.port ?? 0, '127.0.0.1', ok));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // The app's own static files (the model catalogue) come from public/, as vite serves them.
  const staticFetch: typeof fetch = async (input) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (url.origin !== origin) return fetch(url);
    try {
      return new Response(await readFile(PUBLIC + decodeURIComponent(url.pathname.slice(1))));
    } catch {
      return new Response('not found', { status: 404 });
    }
  };
  const engine = await bootEngine({
    manifestUrl: `${origin}/models/index.json`,
    baseUrl: origin,
    gpu: await nodeGpu(),
    dbName: options.dbName ?? `hearth-node-${process.pid}-${Date.now()}`,
    fetch: staticFetch,
    inference: (gpu) => new Engine(gpu, { source: async (id) => new BundledSource(`models/${id.split('/')[1]}/`, { id }) }),
    training: (inference) => trainingEngineOver(inference),
  });
  server.on('request', (req, res) => {
    void toRequest(req, origin)
      .then((r) => engine.app.fetch(r))
      .then((r) => send(res, r))
      .catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
  });
  return {
    url: origin,
    adminKey: engine.adminKey,
    async close() {
      await engine.close();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
