// xgrammar in the browser as the engine will run it: a module Web Worker built by Vite for
// production (the worker format of vite.config.ts), served offline from 127.0.0.1, in headless
// Chromium. The worker loads the bundled tiny-qwen3 tokenizer, compiles constraints through
// src/service/structured (the package evaluated from its source, its WASM from the inlined data
// URI: no request for a .wasm or anything off the origin), walks the grammar with random allowed
// tokens, and recovers from a refused schema. The documents it produces are checked here with ajv.
//
// The app and worker entry files are written by this test into a temporary directory (they
// import Hearth's modules by absolute path), so the check does not depend on how the engine
// worker is wired.
import Ajv2020 from 'ajv/dist/2020';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchBrowser } from './harness';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1, maxLength: 10 },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    unit: { enum: ['c', 'f'] },
    code: { type: 'string', pattern: '^[A-Z]{3}$' },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
  },
  required: ['city', 'days', 'unit', 'code'],
};

const WORKER = `
import { ModelTokenizer } from '${ROOT}src/engine/model/text/tokenizer';
import { prepareStructuredOutput } from '${ROOT}src/service/structured/structured-output';
import { mulberry32 } from '${ROOT}src/engine/tensor/random';

/** Random allowed tokens until the grammar ends (closing tokens preferred now and then). */
function walk(compiled, tokenizer, seed) {
  const random = mulberry32(seed);
  const matcher = compiled.createConstraint({ tokenizer });
  const mask = new Int32Array(Math.ceil(compiled.vocabSize / 32));
  const ids = [];
  let forced = 0;
  for (let step = 0; step < 2000 && !matcher.isTerminated(); step++) {
    const jump = matcher.forcedTokens();
    if (jump.length) {
      forced += jump.length;
      for (const id of jump) { if (!matcher.acceptToken(id)) throw new Error('forced token refused'); ids.push(id); }
      continue;
    }
    const restricted = matcher.fillNextTokenBitmask(mask);
    const allowed = [];
    for (let id = 0; id < compiled.vocabSize; id++) if (!restricted || (mask[id >>> 5] >>> (id & 31)) & 1) allowed.push(id);
    let pool = allowed;
    if (random() < 0.4) {
      const closers = allowed.filter((id) => id === 2 || id === 0 || /["\\]}]/.test(tokenizer.decode([id])));
      if (closers.length) pool = closers;
    }
    const id = pool[Math.floor(random() * pool.length)];
    if (!matcher.acceptToken(id)) throw new Error('allowed token refused');
    ids.push(id);
  }
  const done = matcher.isTerminated();
  matcher.dispose();
  return { text: tokenizer.decode(done ? ids.slice(0, -1) : ids), terminated: done, forced };
}

self.onmessage = async (event) => {
  try {
    const [tj, tc] = await Promise.all(['tokenizer.json', 'tokenizer_config.json'].map((f) => fetch('/models/tiny-qwen3/' + f).then((r) => r.json())));
    const tokenizer = ModelTokenizer.fromJson(tj, tc);
    const model = { tokenizer, vocabSize: 4096, eosTokenIds: [2, 0] };
    const compiled = await prepareStructuredOutput({ structured_outputs: { json: event.data.schema } }, model);
    const walks = [];
    for (let seed = 1; seed <= 5; seed++) walks.push(walk(compiled, tokenizer, seed));
    let refused = null;
    try {
      await prepareStructuredOutput({ structured_outputs: { json: { type: 5 } } }, model);
    } catch (err) {
      refused = { name: err.name, message: err.message, status: err.status };
    }
    const after = await prepareStructuredOutput({ structured_outputs: { regex: '[a-c]{3}!' } }, model);
    const regexWalks = [1, 2, 3].map((seed) => walk(after, tokenizer, seed));
    postMessage({ ok: true, walks, refused, regexWalks, leakedGlobal: 'xgrammar' in self });
  } catch (err) {
    postMessage({ ok: false, error: String(err && err.stack || err) });
  }
};
`;

const MAIN = `
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
globalThis.runStructured = (schema) => new Promise((resolve) => {
  worker.onmessage = (e) => resolve(e.data);
  worker.onerror = (e) => resolve({ ok: false, error: 'worker error: ' + e.message });
  worker.postMessage({ schema });
});
`;

const MIME: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.json': 'application/json' };

async function buildApp(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-xgrammar-e2e-'));
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'index.html'), '<!doctype html><title>xgrammar e2e</title><script type="module" src="./main.js"></script>');
  writeFileSync(join(src, 'main.js'), MAIN);
  writeFileSync(join(src, 'worker.js'), WORKER);
  const { build } = await import('vite');
  await build({
    configFile: false,
    logLevel: 'silent',
    root: src,
    worker: { format: 'es' },
    build: { outDir: join(dir, 'dist'), emptyOutDir: true, target: 'es2022' },
  });
  return join(dir, 'dist');
}

let server: Server;
let url: string;
let browser: Browser;
const requests: string[] = [];

beforeAll(async () => {
  const dist = await buildApp();
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    const file = path.startsWith('/models/') ? join(ROOT, 'public', path) : join(dist, path === '/' ? 'index.html' : path);
    if (!existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((ok) => (server ? server.close(() => ok()) : ok()));
});

it('compiles and matches in a Vite-built module worker, offline, and recovers from a refused schema', async () => {
  const context = await browser.newContext();
  // Offline apart from the test's own origin: anything else fails.
  await context.route('**/*', (route) => {
    requests.push(route.request().url());
    return route.request().url().startsWith(url) ? route.continue() : route.abort();
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url + '/');
  await page.waitForFunction(() => typeof (globalThis as { runStructured?: unknown }).runStructured === 'function');
  const result = await page.evaluate(
    (schema) => (globalThis as unknown as { runStructured: (s: unknown) => Promise<any> }).runStructured(schema),
    SCHEMA,
  );
  expect(result.error).toBeUndefined();
  expect(result.ok).toBe(true);

  const validate = new Ajv2020({ strict: false }).compile(SCHEMA);
  for (const w of result.walks) {
    expect(w.terminated, w.text).toBe(true);
    expect(validate(JSON.parse(w.text)), w.text).toBe(true);
  }
  // Jump-forward decoding forced some tokens (the required keys).
  expect(result.walks.some((w: { forced: number }) => w.forced > 0)).toBe(true);
  expect(result.refused).toEqual({
    name: 'ConstraintError',
    status: 400,
    message: 'Failed to transform json schema into a grammar: Type should be a string',
  });
  for (const w of result.regexWalks) expect(w.text).toMatch(/^[a-c]{3}!$/);
  expect(result.leakedGlobal).toBe(false);

  expect(requests.every((r) => r.startsWith(url))).toBe(true);
  expect(requests.some((r) => r.endsWith('.wasm'))).toBe(false);
  expect(errors).toEqual([]);
  await context.close();
});
