// A whole engine in Node for API tests: the real app, services and store over fake-indexeddb
// (an in-memory IndexedDB implementation; the real browser IndexedDB is covered by test/e2e),
// the real models/index.json read from public/, and no GPU. Each call gets a fresh database.
import 'fake-indexeddb/auto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bootEngine, type Engine, type EngineOptions } from '../../../src/host/engine-boot';

const PUBLIC_DIR = fileURLToPath(new URL('../../../public/', import.meta.url));
export const ORIGIN = 'http://127.0.0.1:5173';

/** fetch for the engine: the app's own static files from public/, data: URLs natively. */
export const staticFetch: typeof fetch = async (input) => {
  const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  if (url.protocol === 'data:') return fetch(url);
  if (url.origin !== ORIGIN) return new Response('not found', { status: 404 });
  try {
    return new Response(await readFile(PUBLIC_DIR + decodeURIComponent(url.pathname.slice(1))));
  } catch {
    return new Response('not found', { status: 404 });
  }
};

let counter = 0;

export interface TestEngine extends Engine {
  call(
    method: string,
    path: string,
    opts?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    headers: Headers;
    json: any;
  }>;
}

export async function startEngine(overrides: Partial<EngineOptions> = {}): Promise<TestEngine> {
  const engine = await bootEngine({
    manifestUrl: `${ORIGIN}/models/index.json`,
    baseUrl: ORIGIN,
    gpu: undefined,
    dbName: `hearth-test-${process.pid}-${counter++}`,
    fetch: staticFetch,
    ...overrides,
  });
  return {
    ...engine,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const key = opts.key === undefined ? engine.adminKey : opts.key;
      if (key !== null) headers.Authorization = `Bearer ${key}`;
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await engine.app.request(`${ORIGIN}${path}`, { method, headers, body });
      const text = await res.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // Not JSON: keep the text.
      }
      return { status: res.status, headers: res.headers, json };
    },
  };
}
