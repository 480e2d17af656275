// /v1/preview/base-models through the real app, services and store (fake-indexeddb; the model
// files in an in-memory file cache): the list, downloads from a URL and from a Hugging Face
// mirror (served from public/models by a fetch that honours Range), a download interrupted by the
// engine stopping and resumed by the next one, bad sources, uploads, and removal.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogSources } from '../../../src/engine/generate/model-sources';
import { asRepository, loadRepository } from '../../../src/engine/model/files/model-repository';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { updateBaseModel } from '../../../src/store/base-models';
import { insertJob } from '../../../src/store/training-jobs';
import { ORIGIN, staticFetch, startEngine, type TestEngine } from './engine-fixture';

const MODELS = fileURLToPath(new URL('../../../public/models/', import.meta.url));
const manifest = JSON.parse(await readFile(MODELS + 'index.json', 'utf8')) as {
  models: { id: string; path: string; parameters: number; architecture: string; description: string }[];
};
const bundled = (name: string) => manifest.models.find((m) => m.path === `models/${name}/`)!;

interface MirrorLog {
  url: string;
  range: string | null;
}

/**
 * A Hugging Face mirror at ORIGIN/mirror: /mirror/{org}/{name}/resolve/{rev}/{file} serves
 * public/models/{name}/{file}, honouring Range. `hold` makes model.safetensors stop after that
 * many bytes until the request is aborted (a connection that stalls mid-file).
 */
function mirrorFetch(log: MirrorLog[], hold?: number): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const m = /^\/mirror\/[^/]+\/([^/]+)\/resolve\/[^/]+\/(.+)$/.exec(url.pathname);
    if (!m) return staticFetch(input, init);
    const headers = new Headers(init?.headers);
    log.push({ url: url.pathname, range: headers.get('Range') });
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(`${MODELS}${m[1]}/${decodeURIComponent(m[2])}`));
    } catch {
      return new Response('Entry not found', { status: 404 });
    }
    const etag = '"v1"';
    const range = /^bytes=(\d+)-$/.exec(headers.get('Range') ?? '');
    const start = range && (headers.get('If-Range') ?? etag) === etag ? Number(range[1]) : 0;
    const body = bytes.subarray(start);
    const status = start > 0 ? 206 : 200;
    const resHeaders: Record<string, string> = { ETag: etag, 'Content-Length': String(body.byteLength) };
    if (start > 0) resHeaders['Content-Range'] = `bytes ${start}-${bytes.byteLength - 1}/${bytes.byteLength}`;
    if (hold === undefined || !m[2].endsWith('.safetensors')) return new Response(body as BodyInit, { status, headers: resHeaders });
    const signal = init?.signal;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body.slice(0, hold));
        signal?.addEventListener('abort', () => controller.error(signal.reason), { once: true });
      },
    });
    return new Response(stream, { status, headers: resHeaders });
  };
}

let e: TestEngine;
beforeAll(async () => {
  e = await startEngine();
});
afterAll(() => e.close());

const list = async (engine: TestEngine = e) => (await engine.call('GET', '/v1/preview/base-models')).json;
const find = async (id: string, engine: TestEngine = e) => (await list(engine)).data.find((m: { id: string }) => m.id === id);
const register = (name: string, base: string) =>
  e.call('POST', '/v1/preview/models', { body: { entity: null, project: 'bm', name, base_model: base, return_existing: true } });

describe('GET /v1/preview/base-models', () => {
  it('lists the bundled models as available, with their size, architecture, default and description', async () => {
    const res = await e.call('GET', '/v1/preview/base-models');
    expect(res.status).toBe(200);
    expect(res.json.object).toBe('list');
    expect(res.json.data.map((m: { id: string }) => m.id)).toEqual(manifest.models.map((m) => m.id));
    const chat = res.json.data.find((m: { id: string }) => m.id === bundled('tiny-chat').id);
    expect(chat).toMatchObject({
      object: 'base_model',
      source: 'bundled',
      status: 'available',
      architecture: 'llama',
      parameters: bundled('tiny-chat').parameters,
      cached_bytes: 0,
      download: null,
      default: true,
      description: bundled('tiny-chat').description,
      loaded: false,
      max_model_len: null,
    });
    // The JSON stage's model is listed beside the default, saying what it is for (issue 27).
    const json = res.json.data.find((m: { id: string }) => m.id === 'hearth/tiny-json');
    expect(json).toMatchObject({ source: 'bundled', architecture: 'llama', default: false, description: bundled('tiny-json').description });
    expect(json.description).toMatch(/structured outputs/);
    expect((await e.call('GET', '/v1/preview/base-models', { key: null })).status).toBe(401);
  });
});

describe('downloads', () => {
  it('downloads a model from a URL in the background; it then serves registration and /v1/models', async () => {
    const url = `${ORIGIN}/models/tiny-qwen2/`;
    const res = await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    expect(res.json).toMatchObject({ id: url, source: 'url', status: 'downloading', download: { error: null } });
    expect(Date.parse(res.json.download.started_at)).not.toBeNaN();
    // Not usable before it is complete.
    expect((await register('early', url)).status).toBe(422);
    await e.services.baseModels!.idle();

    const done = await find(url);
    expect(done).toMatchObject({
      status: 'cached',
      architecture: 'qwen2',
      parameters: bundled('tiny-qwen2').parameters,
      download: null,
      default: false,
      description: null,
    });
    expect(done.cached_bytes).toBeGreaterThan(done.bytes);
    expect(done.max_model_len).toBeGreaterThan(0);
    expect((await register('late', url)).status).toBe(200);
    expect((await e.call('GET', '/v1/models')).json.data.map((m: { id: string }) => m.id)).toContain(url);
    // Asking again changes nothing.
    expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } })).status).toBe(200);
  });

  it('downloads from a Hugging Face mirror, and resumes an interrupted download in the next engine', async () => {
    const dbName = `hearth-bm-resume-${process.pid}`;
    const cache = new MemoryFileCache();
    const first: MirrorLog[] = [];
    const stalled = await startEngine({ dbName, modelFiles: cache, fetch: mirrorFetch(first, 5 << 20) });
    const source = { type: 'huggingface', repo: 'org/tiny-chat', base_url: `${ORIGIN}/mirror` };
    const started = await stalled.call('POST', '/v1/preview/base-models', { body: { source } });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    expect(started.json.id).toBe('org/tiny-chat');
    // Wait until the first 4 MiB chunk of the weights is in the cache and the stream stalls.
    for (let i = 0; i < 200 && !((await cache.partial('org/tiny-chat', 'model.safetensors'))?.bytes ?? 0); i++)
      await new Promise((r) => setTimeout(r, 20));
    const midway = await find('org/tiny-chat', stalled);
    expect(midway.status).toBe('downloading');
    expect(midway.download.loaded).toBeGreaterThanOrEqual(4 << 20);
    await stalled.close(); // the tab goes away mid-download
    const kept = (await cache.partial('org/tiny-chat', 'model.safetensors'))!.bytes;
    expect(kept).toBeGreaterThanOrEqual(4 << 20);

    const second: MirrorLog[] = [];
    const next = await startEngine({ dbName, modelFiles: cache, fetch: mirrorFetch(second) });
    try {
      await next.services.baseModels!.idle();
      const weights = second.filter((r) => r.url.endsWith('model.safetensors'));
      expect(weights).toEqual([{ url: '/mirror/org/tiny-chat/resolve/main/model.safetensors', range: `bytes=${kept}-` }]);
      expect(second.some((r) => r.url.endsWith('config.json'))).toBe(false); // finished files come from the cache
      const done = await find('org/tiny-chat', next);
      expect(done).toMatchObject({
        status: 'cached',
        source: 'huggingface',
        architecture: 'llama',
        parameters: bundled('tiny-chat').parameters,
      });
      const weightsCached = (await cache.get('org/tiny-chat', 'model.safetensors'))!;
      // Byte for byte the file (compared as one Buffer: a per-element diff of 8 MB is slow).
      expect(Buffer.from(await weightsCached.arrayBuffer()).equals(await readFile(MODELS + 'tiny-chat/model.safetensors'))).toBe(true);
    } finally {
      await next.close();
    }
  });

  it('ends a download whose engine died parsing its files in "error" at the next start, once, without parsing them again (issue 26)', async () => {
    const dbName = `hearth-bm-parse-crash-${process.pid}`;
    const cache = new MemoryFileCache();
    const first: MirrorLog[] = [];
    const stalled = await startEngine({ dbName, modelFiles: cache, fetch: mirrorFetch(first, 5 << 20) });
    const source = { type: 'huggingface', repo: 'org/tiny-chat', base_url: `${ORIGIN}/mirror` };
    expect((await stalled.call('POST', '/v1/preview/base-models', { body: { source } })).status).toBe(202);
    for (let i = 0; i < 200 && !((await cache.partial('org/tiny-chat', 'model.safetensors'))?.bytes ?? 0); i++)
      await new Promise((r) => setTimeout(r, 20));
    // The small files were parsed (the marker set, then cleared); then the engine dies as one that
    // crashed parsing tokenizer.json would leave it: the marker still set.
    expect((await stalled.services.db.get('baseModels', 'org/tiny-chat'))?.parsing).toBeNull();
    await updateBaseModel(stalled.services.db, 'org/tiny-chat', { parsing: 'tokenizer.json' });
    await stalled.close();

    for (let start = 0; start < 2; start++) {
      const seen: MirrorLog[] = [];
      const next = await startEngine({ dbName, modelFiles: cache, fetch: mirrorFetch(seen) });
      try {
        await next.services.baseModels!.idle();
        expect(seen, 'nothing of it is fetched or parsed again').toEqual([]);
        const entry = await find('org/tiny-chat', next);
        expect(entry).toMatchObject({ status: 'error' });
        expect(entry.download.error).toMatch(
          /^The engine stopped while parsing tokenizer\.json of org\/tiny-chat, so it was not loaded again/,
        );
      } finally {
        await next.close();
      }
    }
  });

  it('refuses what cannot be a source up front, and ends a wrong repository in "error" with the reason', async () => {
    const bad = await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'huggingface', repo: 'not a repo' } } });
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].loc).toEqual(['body', 'source', 'repo']);
    expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url: 'ftp://x/' } } })).status).toBe(422);
    expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'git', url: 'x' } } })).status).toBe(422);
    const bundledId = bundled('tiny-chat').id;
    expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'huggingface', repo: bundledId } } })).status).toBe(
      409,
    );

    const url = `${ORIGIN}/models/no-such-model/`;
    expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } })).status).toBe(202);
    await e.services.baseModels!.idle();
    const failed = await find(url);
    expect(failed.status).toBe('error');
    expect(failed.download.error).toMatch(/config\.json is missing/);
    expect((await register('broken', url)).status).toBe(422);
    // Asked again, it tries again (a fixed repository would then download).
    const retried = await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } });
    expect(retried.status).toBe(202);
    expect(retried.json.status).toBe('downloading');
    await e.services.baseModels!.idle();
    expect((await find(url)).status).toBe('error');
  });
});

describe('quantize on load', () => {
  it('adds a safetensors model to load as Q4_K blocks, keeps the choice, and refuses unknown or conflicting formats', async () => {
    const url = `${ORIGIN}/models/tiny-chat/`;
    const post = (body: object) => e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url }, ...body } });
    const unknown = await post({ quantization: 'q4' });
    expect(unknown.status).toBe(422);
    expect(unknown.json.detail[0]).toMatchObject({ loc: ['body', 'quantization'], type: 'literal_error' });
    const gguf = await e.call('POST', '/v1/preview/base-models', {
      body: { source: { type: 'huggingface', repo: 'org/x-GGUF', file: 'x-Q8_0.gguf' }, quantization: 'q8_0' },
    });
    expect(gguf.status).toBe(422);
    expect(gguf.json.detail[0].msg).toMatch(/GGUF model keeps the blocks/);
    expect(await find(url)).toBeUndefined();

    const started = await post({ quantization: 'q4_k' });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    expect(started.json).toMatchObject({ format: 'safetensors', quantization: 'Q4_K' });
    await e.services.baseModels!.idle();
    const done = await find(url);
    expect(done).toMatchObject({
      status: 'cached',
      format: 'safetensors',
      quantization: 'Q4_K',
      parameters: bundled('tiny-chat').parameters,
    });
    // tiny-chat (bf16, tied): its 4 x 786432 projection weights become Q4_K (144 bytes per 256),
    // the tied embedding (4096 x 256) stays bf16 as lm_head, the 9 norms of 256 stay as they are.
    expect(done.gpu_bytes).toBe((4 * 786432 * 144) / 256 + 4096 * 256 * 2 + 9 * 256 * 2);
    expect(done.bytes).toBe(bundled('tiny-chat').parameters * 2);
    // The engine loads it as it was added: the catalogue hands the record's choice to the loader.
    const sources = catalogSources({ baseUrl: ORIGIN, lookup: (id) => e.services.catalog.get(id), cache: e.services.modelFiles! });
    const loaded = await loadRepository(asRepository(await sources(url)));
    const dtypes = new Map(loaded.weights.map((w) => [w.name, w.dtype]));
    expect([dtypes.get('model.layers.0.self_attn.q_proj.weight'), dtypes.get('model.embed_tokens.weight')]).toEqual(['q4_k', 'bf16']);
    expect(loaded.weightBytes).toBe(done.gpu_bytes);
    expect((await post({})).status).toBe(200);
    const conflict = await post({ quantization: 'q8_0' });
    expect(conflict.status).toBe(409);
    expect(conflict.json.detail).toMatch(/Q4_K: remove it first/);
  });
});

async function upload(files: [string, string][], id?: string, quantization?: string) {
  const form = new FormData();
  if (id) form.append('id', id);
  if (quantization) form.append('quantization', quantization);
  for (const [dir, name] of files) form.append('files', new File([await readFile(MODELS + `${dir}/${name}`)], name));
  const res = await e.app.request(`${ORIGIN}/v1/preview/base-models/files`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${e.adminKey}` },
    body: form,
  });
  return { status: res.status, json: await res.json() };
}

describe('uploads and removal', () => {
  // Issue 21: Gemma 3's tokenizer has <image_soft_token> one id past the text model's rows; here the
  // same shape on tiny-chat (4096 rows), its added token at id 4096.
  it('drops added tokens past the embedding rows and says so on the entry', async () => {
    const tokenizer = JSON.parse(await readFile(MODELS + 'tiny-chat/tokenizer.json', 'utf8'));
    tokenizer.added_tokens.push({
      id: 4096,
      content: '<image_soft_token>',
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    });
    const form = new FormData();
    form.append('id', 'me/past-rows');
    for (const name of await readdir(MODELS + 'tiny-chat')) {
      const bytes = name === 'tokenizer.json' ? JSON.stringify(tokenizer) : await readFile(MODELS + `tiny-chat/${name}`);
      form.append('files', new File([bytes], name));
    }
    const res = await e.app.request(`${ORIGIN}/v1/preview/base-models/files`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${e.adminKey}` },
      body: form,
    });
    const warning = `tokenizer.json's added token "<image_soft_token>" (id 4096) is past the model's 4096 embedding rows (config.json vocab_size): it is dropped, and a prompt that contains it is refused`;
    expect(res.status).toBe(201);
    expect((await res.json()).warnings).toEqual([warning]);
    expect((await find('me/past-rows')).warnings).toEqual([warning]);
    expect((await find(bundled('tiny-chat').id)).warnings).toEqual([]);
    expect((await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('me/past-rows')}`)).status).toBe(200);
  });

  it('keeps picked files as a model, refuses an incomplete set, and removes cached weights', async () => {
    const names = await readdir(MODELS + 'tiny-qwen3');
    const incomplete = await upload(
      names.filter((n) => n !== 'tokenizer.json').map((n) => ['tiny-qwen3', n]),
      'me/broken',
    );
    expect(incomplete.status).toBe(422);
    expect(JSON.stringify(incomplete.json)).toMatch(/tokenizer\.json is missing/);
    expect(await find('me/broken')).toBeUndefined();
    const badFormat = await upload(
      names.map((n) => ['tiny-qwen3', n]),
      'me/int4',
      'int4',
    );
    expect(badFormat.status).toBe(422);
    expect(badFormat.json.detail[0]).toMatchObject({ loc: ['body', 'quantization'], input: 'int4' });
    expect(await find('me/int4')).toBeUndefined();
    // tiny-qwen3 (f32, hidden 64, tied): Q8_0 everywhere, the embedding included: 34 bytes per 32 weights.
    const q8 = await upload(
      names.map((n) => ['tiny-qwen3', n]),
      'me/qwen3-q8',
      'q8_0',
    );
    expect(q8.status, JSON.stringify(q8.json)).toBe(201);
    expect(q8.json).toMatchObject({ format: 'safetensors', quantization: 'Q8_0', bytes: bundled('tiny-qwen3').parameters * 4 });
    expect(q8.json.gpu_bytes).toBeLessThan(q8.json.bytes * (34 / 32 / 4) * 1.01);

    const added = await upload(
      names.map((n) => ['tiny-qwen3', n]),
      'me/qwen3',
    );
    expect(added.status, JSON.stringify(added.json)).toBe(201);
    expect(added.json).toMatchObject({
      id: 'me/qwen3',
      source: 'files',
      status: 'cached',
      architecture: 'qwen3',
      parameters: bundled('tiny-qwen3').parameters,
      warnings: [],
    });
    expect(
      (
        await upload(
          names.map((n) => ['tiny-qwen3', n]),
          'me/qwen3',
        )
      ).status,
    ).toBe(409);
    // Unnamed uploads are named after the config's model type, numbered when the name is taken.
    const unnamed = [await upload(names.map((n) => ['tiny-qwen3', n])), await upload(names.map((n) => ['tiny-qwen3', n]))];
    expect(unnamed.map((u) => [u.status, u.json.id])).toEqual([
      [201, 'local/qwen3'],
      [201, 'local/qwen3-2'],
    ]);
    expect((await register('uploaded', 'me/qwen3')).status).toBe(200);

    // A queued job on the model keeps its weights.
    const model = (await register('uploaded', 'me/qwen3')).json;
    const owner = (await e.db.get('models', model.id))!.principalId;
    const job = {
      id: crypto.randomUUID(),
      principalId: owner,
      modelId: model.id,
      kind: 'rl' as const,
      status: 'PENDING' as const,
      queuedAt: 1,
      createdAt: 1,
      trainingStart: null,
      trainingEnd: null,
      errorMessage: null,
      nextEventSeq: 0,
    };
    await insertJob(e.db, job, {});
    const refused = await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('me/qwen3')}`);
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toMatch(job.id);
    await e.db.delete('trainingJobs', job.id);

    const cacheKey = (await e.db.get('baseModels', 'me/qwen3'))!.cacheKey;
    expect((await e.services.modelFiles!.listModels()).some((m) => m.modelId === cacheKey)).toBe(true);
    const removed = await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('me/qwen3')}`);
    expect(removed.status).toBe(200);
    expect(removed.json).toMatchObject({ id: 'me/qwen3', deleted: true });
    expect(removed.json.freed_bytes).toBeGreaterThan(0);
    expect(await find('me/qwen3')).toBeUndefined();
    expect((await e.services.modelFiles!.listModels()).some((m) => m.modelId === cacheKey)).toBe(false);

    // A bundled model stays listed; unknown ids are 404, encoded or not.
    const bundledId = bundled('tiny-chat').id;
    expect((await e.call('DELETE', `/v1/preview/base-models/${bundledId}`)).status).toBe(200);
    expect(await find(bundledId)).toMatchObject({ status: 'available', cached_bytes: 0 });
    expect((await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('no/such')}`)).status).toBe(404);
    expect((await e.call('GET', `/v1/preview/base-models/${encodeURIComponent(bundledId)}`)).json.id).toBe(bundledId);
  });
});
