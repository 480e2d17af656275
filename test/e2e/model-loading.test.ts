// Model loading in headless Chromium, for real: the bundled default model fetched from the app's
// origin into the IndexedDB file cache and loaded again offline from it, a download from another
// origin that drops mid-file and resumes with Range, the tokenizer and chat template in the
// browser, the weights uploaded to WebGPU, and greedy generation whose tokens match the same
// computation in Node. The page code is test/e2e/model-loading-entry.ts, bundled here with Vite.
//
// Not covered here yet: generation through the engine worker's GPU forward and /v1/chat/completions
// (the generation core and the chat issue build those); this test generates with the reference
// forward in the page.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadModelFiles } from '../../src/engine/model/files/repo';
import { DirectorySource } from '../../src/engine/model/sources/directory-source';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { greedyDecode, ReferenceModel } from '../../src/engine/reference/model';
import { FileServer } from '../unit/model/http-fixture';
import { startHearth, type Hearth } from './harness';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE_PATH = '/__e2e/model-loading.js';
const messages = [{ role: 'user', content: 'What is 12 + 7?' }];
const STEPS = 8;

async function buildBundle(): Promise<string> {
  const outDir = mkdtempSync(join(tmpdir(), 'hearth-model-e2e-'));
  const { build } = await import('vite');
  await build({
    configFile: false,
    logLevel: 'silent',
    root: ROOT,
    build: {
      outDir,
      emptyOutDir: true,
      minify: false,
      lib: {
        entry: join(ROOT, 'test/e2e/model-loading-entry.ts'),
        formats: ['iife'],
        name: 'HearthModelE2EBundle',
        fileName: () => 'bundle.js',
      },
    },
  });
  return readFileSync(join(outDir, 'bundle.js'), 'utf8');
}

let h: Hearth;
let files: FileServer;
beforeAll(async () => {
  const [bundle, hearth] = await Promise.all([buildBundle(), startHearth()]);
  h = hearth;
  h.server.files.set(BUNDLE_PATH, { body: bundle, type: 'text/javascript; charset=utf-8' });
  await h.page.addScriptTag({ url: BUNDLE_PATH });
  await h.page.waitForFunction(() => 'HearthModelE2E' in globalThis);
  files = await new FileServer().start();
});
afterAll(async () => {
  await files?.stop();
  await h?.close();
});

// The page API, typed loosely: page.evaluate sends plain data both ways.
type E2E = Record<string, (...args: any[]) => Promise<any>> & { MODEL_FILES_DB: string };
// The function's source is rebuilt in the page (it cannot be sent as a function).
const inPage = <T>(fn: (api: E2E, arg: any) => Promise<T>, arg?: unknown): Promise<T> =>
  // oxlint-disable-next-line typescript/no-implied-eval
  h.page.evaluate(({ body, arg }) => new Function('api', 'arg', `return (${body})(api, arg)`)((globalThis as any).HearthModelE2E, arg), {
    body: fn.toString(),
    arg,
  });

it('fetches the bundled model into IndexedDB ("hearth-model-files"), then loads it offline from there', async () => {
  const first = await inPage((api) => api.loadBundled('hearth/tiny-chat'));
  expect(first.config).toMatchObject({ arch: 'llama', hiddenSize: 256, numLayers: 4, vocabSize: 4096, tieWordEmbeddings: true });
  expect(first.eosTokenIds).toEqual([2, 0]);
  const fetched = new Set(first.progress.filter((p: any) => !p.fromCache).map((p: any) => p.file));
  expect(fetched).toEqual(
    new Set(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']),
  );

  expect(await inPage((api) => api.databases())).toContain('hearth-model-files');
  const cached = await inPage((api) => api.listCached());
  const entry = cached.find((m: any) => m.modelId === 'bundled:hearth/tiny-chat');
  expect(entry.files.every((f: any) => f.complete)).toBe(true);
  expect(entry.files).toHaveLength(5);

  const offline = await inPage((api) => api.loadBundled('hearth/tiny-chat', { offline: true }));
  expect(offline.config).toEqual(first.config);
  expect(offline.weightBytes).toBe(first.weightBytes);
  expect(offline.progress.every((p: any) => p.fromCache)).toBe(true);
});

it('generates in the page: template, tokenizer, forward, streaming detokenizer, same tokens as Node', async () => {
  const browser = await inPage((api, arg) => api.generate('hearth/tiny-chat', arg.messages, arg.steps), { messages, steps: STEPS });
  expect(browser.prompt).toBe('<|im_start|>user\nWhat is 12 + 7?<|im_end|>\n<|im_start|>assistant\n');
  expect(browser.generated).toHaveLength(STEPS);
  expect(browser.deltas.join('')).toBe(browser.text);
  expect(browser.text).toBe(browser.decoded);

  const node = await loadModelFiles(new DirectorySource(join(ROOT, 'public/models/tiny-chat')));
  const prompt = node.chatTemplates.forRequest().render({ messages, addGenerationPrompt: true });
  const ids = node.tokenizer.encode(prompt, { addSpecialTokens: false });
  expect(browser.promptIds).toEqual(ids);
  const tensors: TensorData[] = [];
  for await (const t of node.tensors()) tensors.push(t);
  expect(browser.generated).toEqual(greedyDecode(new ReferenceModel(node.config, tensors), ids, STEPS));
});

it('uploads the loaded weights to WebGPU', async () => {
  const gpu = await inPage((api) => api.uploadToGpu('hearth/tiny-chat'));
  // bf16 matrices stay 2 bytes per weight; norms become f32 vectors; the RoPE table is added.
  expect(gpu.bytes).toBeGreaterThan(4_196_608 * 2);
  expect(gpu.bytes).toBeLessThan(4_196_608 * 2 + 4_000_000);
});

it('downloads from another origin, resumes after a dropped connection, and caches', async () => {
  files.cors = true;
  const dir = join(ROOT, 'public/models/tiny-qwen3');
  for (const name of readdirSync(dir)) files.put(`/hearth/tiny-qwen3/resolve/main/${name}`, new Uint8Array(readFileSync(join(dir, name))));
  files.dropPath = '/model.safetensors';
  files.dropAfter = 400_000;
  files.dropCount = 1;
  const result = await inPage((api, base) => api.loadFromUrl('hearth/tiny-qwen3', base), files.base);
  expect(result.arch).toBe('qwen3');
  expect(result.tensorBytes).toBe(result.weightBytes);
  const weightRequests = files.requestsFor('/hearth/tiny-qwen3/resolve/main/model.safetensors');
  expect(weightRequests).toHaveLength(2);
  expect(weightRequests[1].range).toMatch(/^bytes=[1-9]\d*-$/);
  const cached = await inPage((api) => api.listCached());
  expect(cached.find((m: any) => m.modelId === 'hearth/tiny-qwen3').files.every((f: any) => f.complete)).toBe(true);
  // Offline (nothing listens on port 9): every file, and every 404 the first load saw, is answered by IndexedDB.
  const offline = await inPage((api) => api.loadFromUrl('hearth/tiny-qwen3', 'http://127.0.0.1:9', 0));
  expect(offline).toEqual(result);
});

it('a download cut off in one load keeps its bytes in IndexedDB and the next load resumes', async () => {
  const dir = join(ROOT, 'public/models/tiny-qwen2');
  for (const name of readdirSync(dir)) files.put(`/hearth/tiny-qwen2/resolve/main/${name}`, new Uint8Array(readFileSync(join(dir, name))));
  files.dropPath = '/model.safetensors';
  files.dropAfter = 600_000;
  files.dropCount = 1;
  const failed = await inPage(
    (api, base) =>
      api.loadFromUrl('hearth/tiny-qwen2', base, 0).then(
        () => 'loaded',
        (e: Error) => e.message,
      ),
    files.base,
  );
  expect(failed).toMatch(/model\.safetensors: download interrupted after .*loading the model again resumes/);
  const partial = (await inPage((api) => api.listCached())).find((m: any) => m.modelId === 'hearth/tiny-qwen2');
  const weights = partial.files.find((f: any) => f.file === 'model.safetensors');
  expect(weights.complete).toBe(false);
  expect(weights.bytes).toBeGreaterThan(0);

  const result = await inPage((api, base) => api.loadFromUrl('hearth/tiny-qwen2', base, 0), files.base);
  expect(result.arch).toBe('qwen2');
  expect(files.requestsFor('/hearth/tiny-qwen2/resolve/main/model.safetensors').at(-1)!.range).toBe(`bytes=${weights.bytes}-`);
  // The small files were complete after the first attempt: not asked for again.
  expect(files.requestsFor('/hearth/tiny-qwen2/resolve/main/config.json')).toHaveLength(1);
});

it('removes a cached model: an offline load then fails with a clear error', async () => {
  await inPage((api) => api.removeCached('bundled:hearth/tiny-chat'));
  const cached = await inPage((api) => api.listCached());
  expect(cached.map((m: any) => m.modelId)).not.toContain('bundled:hearth/tiny-chat');
  const error = await inPage((api) =>
    api.loadBundled('hearth/tiny-chat', { offline: true }).then(
      () => 'loaded',
      (e: Error) => e.message,
    ),
  );
  expect(error).toMatch(/config\.json: cannot reach .*models\/tiny-chat\/config\.json/);
});
