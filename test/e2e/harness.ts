/**
 * The end-to-end harness every e2e test file builds on: the built app (dist/) served on a free
 * 127.0.0.1 port, headless Chromium (Debian's /usr/bin/chromium through playwright-core, WebGPU
 * on), pages that wait for `hearth.ready()`, `fetch('/v1/...')` run inside a page, and the real
 * `openai` npm package available inside the page as `window.OpenAI`.
 *
 *   const h = await startHearth();          // server + browser + context + first app page + admin key
 *   const r = await api(h.page, 'GET', '/v1/preview/models', { key: h.key });
 *   r.status, r.json, r.text, r.headers
 *   const page2 = await openApp(h.context, h.server);    // another tab of the same browser profile
 *   await loadOpenAI(page);  // then page.evaluate(() => new OpenAI({...}))
 *   await h.close();
 *
 * One browser per test file (launching costs ~1 s; the machine has 2 cores). A context is one
 * browser profile: its tabs share the Service Worker, the engine-host lock and IndexedDB; a new
 * context starts from nothing. Requires `npm run build` first (`npm test` does it).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'dist');
export const CHROMIUM = process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.safetensors': 'application/octet-stream',
  '.jsonl': 'application/jsonl',
  '.txt': 'text/plain; charset=utf-8',
};

/** A page of the origin that is not the app: controlled by the Service Worker, never hosts the engine. */
export const BLANK_PATH = '/__e2e/blank.html';
const OPENAI_PATH = '/__e2e/openai.js';

export interface AppServer {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  close(): Promise<void>;
  /** Serve extra files (path -> body) from the same origin, e.g. SFT training data. */
  files: Map<string, { body: string | Buffer; type: string }>;
  /**
   * Make `path` a response that never comes (headers included): `requested` resolves when a
   * request for it arrives, `closed` when the requester gives up and closes the connection.
   */
  stall(path: string): { requested: Promise<void>; closed: Promise<void> };
}

/** Serves dist/ like `vite preview` (without SPA fallback), plus the harness's own files. */
export async function serveDist(): Promise<AppServer> {
  if (!existsSync(join(DIST, 'index.html')) || !existsSync(join(DIST, 'sw.js'))) {
    throw new Error('dist/ is missing or incomplete: run `npm run build` first (npm test and npm run test:e2e do).');
  }
  const files = new Map<string, { body: string | Buffer; type: string }>();
  files.set(BLANK_PATH, { body: '<!doctype html><title>blank</title><p>e2e blank page</p>', type: MIME['.html'] });
  const stalls = new Map<string, { requested(): void; closed(): void }>();
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const stall = stalls.get(path);
    if (stall) {
      stall.requested();
      res.on('close', () => stall.closed());
      return;
    }
    if (path === OPENAI_PATH) {
      void openaiBundle().then(
        (js) => {
          res.writeHead(200, { 'Content-Type': MIME['.js'] });
          res.end(js);
        },
        (err: Error) => {
          res.writeHead(500);
          res.end(err.message);
        },
      );
      return;
    }
    const extra = files.get(path);
    if (extra) {
      res.writeHead(200, { 'Content-Type': extra.type, 'Cache-Control': 'no-store' });
      res.end(extra.body);
      return;
    }
    const file = normalize(join(DIST, path === '/' ? 'index.html' : path));
    if (!file.startsWith(DIST) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': MIME['.html'] });
      res.end('<!doctype html><title>404</title><p>Not found</p>');
      return;
    }
    res.writeHead(200, { 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-cache' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    files,
    stall(path) {
      let requested!: () => void;
      let closed!: () => void;
      const out = { requested: new Promise<void>((r) => (requested = r)), closed: new Promise<void>((r) => (closed = r)) };
      stalls.set(path, { requested, closed });
      return out;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/**
 * Headless Chromium with WebGPU (SwiftShader where there is no GPU) and a fresh profile; with
 * `webgpu: false`, without it (no --enable-unsafe-webgpu, and --disable-webgpu): a browser that
 * offers no adapter, where the engine runs on the CPU backend.
 */
export async function launchBrowser(opts: { webgpu?: boolean } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: on Debian, apt-get install chromium.`);
  const args =
    opts.webgpu === false ? [...CHROMIUM_FLAGS.filter((f) => f !== '--enable-unsafe-webgpu'), '--disable-webgpu'] : CHROMIUM_FLAGS;
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

/** Opens `path` of the app in a new tab and waits until `hearth.ready()` resolves. */
export async function openApp(context: BrowserContext, server: AppServer, path = '/'): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error(`[page ${path}] ${err.message}`));
  await page.goto(server.url + path);
  await page.waitForFunction(() => typeof globalThis.hearth?.ready === 'function');
  await page.evaluate(() => globalThis.hearth.ready());
  return page;
}

export async function adminKeyOf(page: Page): Promise<string> {
  return page.evaluate(() => globalThis.hearth.adminKey());
}

export interface ApiResult {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  json: any;
}

export interface ApiOptions {
  /** Bearer key; null sends no Authorization header. */
  key?: string | null;
  /** JSON body (sets Content-Type: application/json unless headers override it). */
  body?: unknown;
  /** A body sent as is. */
  rawBody?: string;
  headers?: Record<string, string>;
}

/** Runs `fetch(path)` inside the page (through its Service Worker) and returns the whole answer. */
export async function api(page: Page, method: string, path: string, opts: ApiOptions = {}): Promise<ApiResult> {
  return page.evaluate(
    async ({ method, path, opts }) => {
      const headers: Record<string, string> = {};
      if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['Content-Type'] = 'application/json';
      }
      Object.assign(headers, opts.headers ?? {});
      const res = await fetch(path, { method, headers, body });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: Object.fromEntries(res.headers), text, json };
    },
    { method, path, opts: { ...opts, key: opts.key ?? undefined } },
  );
}

let bundle: Promise<string> | undefined;

/** The `openai` package as one classic script defining window.OpenAI, built once and cached. */
export function openaiBundle(): Promise<string> {
  bundle ??= (async () => {
    const version = JSON.parse(readFileSync(join(ROOT, 'node_modules/openai/package.json'), 'utf8')).version as string;
    const outDir = join(ROOT, 'node_modules/.cache/hearth-e2e', `openai-${version}`);
    const out = join(outDir, 'openai.iife.js');
    if (!existsSync(out)) {
      // Built into a folder of this process and renamed into place: two e2e files may run at once.
      const building = `${outDir}.${process.pid}`;
      mkdirSync(building, { recursive: true });
      const { build } = await import('vite');
      await build({
        configFile: false,
        logLevel: 'silent',
        root: ROOT,
        build: {
          outDir: building,
          emptyOutDir: false,
          minify: false,
          lib: {
            entry: resolve(ROOT, 'test/e2e/openai-entry.ts'),
            formats: ['iife'],
            name: 'HearthOpenAIBundle',
            fileName: () => 'openai.iife.js',
          },
        },
      });
      try {
        renameSync(building, outDir);
      } catch {
        // Another file renamed its build into place first: the same bundle.
        rmSync(building, { recursive: true, force: true });
      }
    }
    return readFileSync(out, 'utf8');
  })();
  return bundle;
}

/** Makes `window.OpenAI` (the real openai SDK) available in the page. */
export async function loadOpenAI(page: Page): Promise<void> {
  await page.addScriptTag({ url: OPENAI_PATH });
  await page.waitForFunction(() => typeof (globalThis as { OpenAI?: unknown }).OpenAI === 'function');
}

export interface Hearth {
  server: AppServer;
  browser: Browser;
  context: BrowserContext;
  /** The first app tab: it hosts the engine. */
  page: Page;
  /** The admin key of this profile's Hearth. */
  key: string;
  close(): Promise<void>;
}

/** Server + browser + a fresh profile with one app tab, ready, and its admin key. */
export async function startHearth(opts: { webgpu?: boolean } = {}): Promise<Hearth> {
  const server = await serveDist();
  const browser = await launchBrowser(opts);
  const context = await browser.newContext();
  const page = await openApp(context, server);
  const key = await adminKeyOf(page);
  return {
    server,
    browser,
    context,
    page,
    key,
    async close() {
      await context.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
      await server.close();
    },
  };
}
