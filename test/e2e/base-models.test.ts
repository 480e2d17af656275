// Base models in the browser: a download from a Hugging Face mirror (a local server laid out like
// huggingface.co, on another origin, with Range support) runs in the engine worker and stores its
// chunks in IndexedDB; the tab reloads mid-file, the next engine resumes from the stored bytes,
// and the downloaded model then answers /v1/chat/completions. Storage numbers grow with it.
// Picked files upload as multipart/form-data through the Service Worker, and removal frees them.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type ApiResult, startHearth, type Hearth } from './harness';
import { serveMirror, until as waitFor, writeRangeHead } from './hf-mirror';

const MODEL_DIR = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));
const STALL_AT = 5 << 20;

interface Mirror {
  url: string;
  /** While true, model.safetensors stops after STALL_AT bytes and the connection hangs. */
  stall: boolean;
  requests: { path: string; range: string | null }[];
  close(): Promise<void>;
}

async function startMirror(): Promise<Mirror> {
  const mirror: Mirror = { url: '', stall: true, requests: [], close: async () => undefined };
  const server = await serveMirror((req, res) => {
    const m = /^\/org\/tiny-chat\/resolve\/main\/([\w.-]+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    let bytes: Buffer;
    try {
      if (!m) throw new Error('not found');
      bytes = readFileSync(MODEL_DIR + m[1]);
    } catch {
      return void res.writeHead(404).end('Entry not found');
    }
    const range = req.headers.range ?? null;
    mirror.requests.push({ path: m[1], range });
    const { start } = writeRangeHead(req, res, bytes.length);
    if (mirror.stall && m[1] === 'model.safetensors') res.write(bytes.subarray(start, STALL_AT)); // ...and never ends
    else res.end(bytes.subarray(start));
  });
  mirror.url = server.url;
  mirror.close = server.close;
  return mirror;
}

let h: Hearth;
let mirror: Mirror;
beforeAll(async () => {
  [h, mirror] = await Promise.all([startHearth(), startMirror()]);
});
afterAll(async () => {
  await h?.close();
  await mirror?.close();
});

const ID = 'org/tiny-chat';
const entry = async () =>
  ((await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key })).json.data as any[]).find((m) => m.id === ID);

const until = <T>(what: string, probe: () => Promise<T | undefined | false>) =>
  waitFor(what, probe, async () => `${JSON.stringify(await entry())}, mirror saw ${JSON.stringify(mirror.requests)}`);

describe('a base model downloaded in the background', () => {
  it('survives a reload mid-download, resumes where it stopped, and then serves chat completions', async () => {
    const before = (await api(h.page, 'GET', '/v1/preview/storage', { key: h.key })).json;
    expect(before.quota).toBeGreaterThan(0);

    const started = await api(h.page, 'POST', '/v1/preview/base-models', {
      key: h.key,
      body: { source: { type: 'huggingface', repo: ID, base_url: mirror.url } },
    });
    expect(started.status, started.text).toBe(202);
    expect(started.json).toMatchObject({ id: ID, source: 'huggingface', status: 'downloading' });

    // The weights stall after 5 MiB: the first 4 MiB chunk is in IndexedDB, progress says so,
    // and once nothing has arrived for a while the speed drops to 0 (no false "time left").
    const midway = await until('the first chunk of the weights, then a stalled speed', async () => {
      const e = await entry();
      return e?.download?.loaded >= 4 << 20 && e.download.bytes_per_second === 0 && e;
    });
    expect(midway.status).toBe('downloading');
    expect(midway.download.total).toBeGreaterThan(midway.download.loaded);

    mirror.stall = false;
    await h.page.reload();
    await h.page.waitForFunction(() => typeof globalThis.hearth?.ready === 'function');
    await h.page.evaluate(() => globalThis.hearth.ready());
    // Right after the reload the progress is read back from IndexedDB.
    const afterReload = await entry();
    expect(afterReload.download?.loaded ?? afterReload.cached_bytes).toBeGreaterThanOrEqual(4 << 20);

    const done = await until('the download to finish', async () => {
      const e = await entry();
      if (e?.status === 'error') throw new Error(e.download.error);
      return e?.status === 'cached' && e;
    });
    expect(done).toMatchObject({ architecture: 'llama', download: null });
    const weights = mirror.requests.filter((r) => r.path === 'model.safetensors');
    expect(weights).toHaveLength(2);
    expect(weights[0].range).toBeNull();
    expect(Number(/^bytes=(\d+)-$/.exec(weights[1].range ?? '')?.[1])).toBeGreaterThanOrEqual(4 << 20);
    expect(mirror.requests.filter((r) => r.path === 'config.json')).toHaveLength(1);

    const chat: ApiResult = await api(h.page, 'POST', '/v1/chat/completions', {
      key: h.key,
      body: { model: ID, messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 3, temperature: 0, ignore_eos: true },
    });
    expect(chat.status, chat.text).toBe(200);
    expect(chat.json.model).toBe(ID);
    expect(chat.json.usage.completion_tokens).toBe(3);
    expect(await entry()).toMatchObject({ loaded: true, max_model_len: expect.any(Number) });

    const after = (await api(h.page, 'GET', '/v1/preview/storage', { key: h.key })).json;
    expect(after.kinds.weights - before.kinds.weights).toBeGreaterThanOrEqual(done.bytes);
    expect(after.usage).toBeGreaterThan(before.usage);
  });

  it('adds a model from picked files (multipart through the Service Worker) and removes it', async () => {
    const dir = fileURLToPath(new URL('../../public/models/tiny-qwen3/', import.meta.url));
    const files = readdirSync(dir).map((name) => ({ name, base64: readFileSync(dir + name).toString('base64') }));
    const added = await h.page.evaluate(
      async ({ key, files }) => {
        const form = new FormData();
        for (const f of files) form.append('file', new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name));
        const res = await fetch('/v1/preview/base-models/files', {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}` },
          body: form,
        });
        return { status: res.status, json: await res.json() };
      },
      { key: h.key, files },
    );
    expect(added.status, JSON.stringify(added.json)).toBe(201);
    expect(added.json).toMatchObject({ id: 'local/qwen3', source: 'files', status: 'cached', architecture: 'qwen3' });
    const storage = (await api(h.page, 'GET', '/v1/preview/storage', { key: h.key })).json;

    const removed = await api(h.page, 'DELETE', `/v1/preview/base-models/${encodeURIComponent('local/qwen3')}`, { key: h.key });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.json.freed_bytes).toBeGreaterThan(0);
    const list = (await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key })).json.data.map((m: { id: string }) => m.id);
    expect(list).not.toContain('local/qwen3');
    const after = (await api(h.page, 'GET', '/v1/preview/storage', { key: h.key })).json;
    expect(storage.kinds.weights - after.kinds.weights).toBe(removed.json.freed_bytes);
  });
});
