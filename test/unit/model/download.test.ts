// Downloads against a real HTTP server on 127.0.0.1: progress events, resuming with Range after a
// dropped connection (within one load and across loads), servers that ignore ranges, a file that
// changed on the server, revalidation, cache hits without network, abort, 404 / 401, Hugging Face
// URLs and a mirror base. The cache here is MemoryFileCache; the IndexedDB cache is tested in the browser (e2e).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { downloadFile, parseContentRange } from '../../../src/engine/model/sources/download';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { SourceError, type DownloadProgress } from '../../../src/engine/model/sources/source';
import { isHfRepoId, UrlSource } from '../../../src/engine/model/sources/url-source';
import { FileServer, patternBytes } from './http-fixture';

const SIZE = 1 << 20;
const body = patternBytes(SIZE);
const bytesOf = async (blob: Blob | null) => new Uint8Array(await blob!.arrayBuffer());
/** Byte equality without Vitest's element-by-element diff (slow on a megabyte). */
const same = async (blob: Blob | null, expected: Uint8Array) => Buffer.compare(await bytesOf(blob), expected) === 0;

let server: FileServer;
beforeEach(async () => {
  server = await new FileServer().start();
  server.put('/org/model/resolve/main/model.safetensors', body);
});
afterEach(() => server.stop());

const source = (cache: MemoryFileCache | null, options = {}) =>
  new UrlSource('org/model', { hfBase: server.base, cache, chunkBytes: 64 << 10, retryDelayMs: 5, ...options });

describe('URLs', () => {
  it('a repo id resolves to <hfBase>/<id>/resolve/<revision>/<file>; a URL is used as the base', async () => {
    expect(isHfRepoId('Qwen/Qwen3-0.6B')).toBe(true);
    expect(isHfRepoId('https://x/y')).toBe(false);
    expect(isHfRepoId('a/../b')).toBe(false);
    expect(new UrlSource('Qwen/Qwen3-0.6B').baseUrl).toBe('https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/');
    expect(new UrlSource('Qwen/Qwen3-0.6B', { hfBase: 'https://hf-mirror.com/', revision: 'v1' }).baseUrl).toBe(
      'https://hf-mirror.com/Qwen/Qwen3-0.6B/resolve/v1/',
    );
    expect(new UrlSource('https://example.org/models/x').baseUrl).toBe('https://example.org/models/x/');
    expect(() => new UrlSource('not a repo')).toThrow(/neither a Hugging Face repo id/);

    const blob = await source(null).open('model.safetensors');
    expect(await same(blob, body)).toBe(true);
    expect(server.log.map((r) => r.path)).toEqual(['/org/model/resolve/main/model.safetensors']);
  });

  it('404 is "no such file"; 401 says private, gated or missing', async () => {
    expect(await source(null).open('absent.json')).toBeNull();
    server.unauthorized.add('/org/model/');
    const attempt = source(null).open('model.safetensors');
    await expect(attempt).rejects.toThrow(SourceError);
    await expect(source(null).open('model.safetensors')).rejects.toThrow(
      /answered 401: the repository is private, gated, or does not exist/,
    );
  });
});

describe('progress', () => {
  it('reports loaded bytes rising to the total, with a rate', async () => {
    server.writeBytes = 64 << 10;
    server.writeDelayMs = 30;
    const events: DownloadProgress[] = [];
    await source(null).open('model.safetensors', { onProgress: (p) => events.push(p) });
    expect(events.length).toBeGreaterThan(2);
    expect(events.every((e) => e.file === 'model.safetensors' && e.total === SIZE)).toBe(true);
    for (let i = 1; i < events.length; i++) expect(events[i].loaded).toBeGreaterThanOrEqual(events[i - 1].loaded);
    expect(events.at(-1)!.loaded).toBe(SIZE);
    expect(events.some((e) => e.bytesPerSecond > 0 && Number.isFinite(e.bytesPerSecond))).toBe(true);
  });
});

describe('resume', () => {
  const path = '/org/model/resolve/main/model.safetensors';

  it('after a dropped connection, asks for the rest with Range and If-Range', async () => {
    server.dropAfter = 300_000;
    server.dropCount = 1;
    const blob = await source(new MemoryFileCache()).open('model.safetensors');
    expect(await same(blob, body)).toBe(true);
    const [first, second] = server.requestsFor(path);
    expect(first.range).toBeNull();
    const resumedAt = Number(second.range!.match(/^bytes=(\d+)-$/)![1]);
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThanOrEqual(300_000);
    expect(second.ifRange).toBe(server.files.get(path)!.etag);
  });

  it('across loads: a failed load leaves the bytes in the cache and the next load continues', async () => {
    const cache = new MemoryFileCache();
    server.dropAfter = 400_000;
    server.dropCount = 10;
    await expect(source(cache, { retries: 0 }).open('model.safetensors')).rejects.toThrow(/resumes where this stopped/);
    const partial = await cache.partial('org/model', 'model.safetensors');
    expect(partial!.bytes).toBeGreaterThan(0);
    expect((await cache.listModels())[0].files[0]).toMatchObject({ complete: false, total: SIZE });

    server.dropCount = 0;
    const blob = await source(cache).open('model.safetensors');
    expect(await same(blob, body)).toBe(true);
    expect(server.requestsFor(path).at(-1)!.range).toBe(`bytes=${partial!.bytes}-`);
  });

  it('several drops in one load still assemble the exact file', async () => {
    server.dropAfter = 200_000;
    server.dropCount = 3;
    const blob = await source(new MemoryFileCache()).open('model.safetensors');
    expect(await same(blob, body)).toBe(true);
    expect(server.requestsFor(path)).toHaveLength(4);
  });

  it('a server that ignores ranges: the download restarts from zero and is still exact', async () => {
    server.dropAfter = 300_000;
    server.dropCount = 1;
    server.ignoreRange = true;
    const blob = await source(new MemoryFileCache()).open('model.safetensors');
    expect(await same(blob, body)).toBe(true);
    expect(server.requestsFor(path)[1].range).not.toBeNull(); // it asked, the server sent 200
  });

  it('a file that changed on the server (If-Range fails) is downloaded again whole', async () => {
    const cache = new MemoryFileCache();
    server.dropAfter = 300_000;
    server.dropCount = 1;
    await expect(source(cache, { retries: 0 }).open('model.safetensors')).rejects.toThrow(SourceError);
    const changed = patternBytes(SIZE, 99);
    server.put(path, changed, '"v2"');
    const blob = await source(cache).open('model.safetensors');
    expect(await same(blob, changed)).toBe(true);
  });

  it('abort stops the download and keeps what arrived for later', async () => {
    const cache = new MemoryFileCache();
    server.writeBytes = 64 << 10;
    server.writeDelayMs = 20;
    const controller = new AbortController();
    const attempt = source(cache).open('model.safetensors', {
      signal: controller.signal,
      onProgress: (p) => p.loaded > 200_000 && controller.abort(new DOMException('user cancelled', 'AbortError')),
    });
    await expect(attempt).rejects.toThrow(/user cancelled/);
    expect((await cache.partial('org/model', 'model.safetensors'))!.bytes).toBeGreaterThan(0);
    server.writeDelayMs = 0;
    expect(await same(await source(cache).open('model.safetensors'), body)).toBe(true);
  });
});

describe('cache', () => {
  it('a completed file is served from the cache with no request, and can be removed', async () => {
    const cache = new MemoryFileCache();
    await source(cache).open('model.safetensors');
    const before = server.log.length;
    const events: DownloadProgress[] = [];
    const again = await source(cache).open('model.safetensors', { onProgress: (p) => events.push(p) });
    expect(server.log.length).toBe(before);
    expect(await same(again, body)).toBe(true);
    expect(events).toEqual([{ file: 'model.safetensors', loaded: SIZE, total: SIZE, bytesPerSecond: 0, fromCache: true }]);
    expect(await cache.listModels()).toMatchObject([
      { modelId: 'org/model', bytes: SIZE, files: [{ file: 'model.safetensors', complete: true }] },
    ]);
    await cache.removeModel('org/model');
    expect(await cache.listModels()).toEqual([]);
    await source(cache).open('model.safetensors');
    expect(server.log.length).toBe(before + 1);
  });

  it('a cache refuses an append at the wrong offset', async () => {
    const cache = new MemoryFileCache();
    await cache.append('m', 'f', 0, new Uint8Array(4), { validator: null, total: 8, url: 'u' });
    await expect(cache.append('m', 'f', 2, new Uint8Array(4), { validator: null, total: 8, url: 'u' })).rejects.toThrow(
      /append at 2 but 4 bytes/,
    );
  });

  it('downloadFile without a source: the same contract', async () => {
    const blob = await downloadFile({ url: `${server.base}/org/model/resolve/main/model.safetensors`, file: 'm', modelId: 'x' });
    expect(blob!.size).toBe(SIZE);
  });
});

describe('revalidation (files that change with the app)', () => {
  const path = '/org/model/resolve/main/model.safetensors';
  const url = () => `${server.base}${path}`;
  const load = (cache: MemoryFileCache, extra = {}) =>
    downloadFile({ url: url(), file: 'model.safetensors', modelId: 'bundled', cache, revalidate: true, retryDelayMs: 5, ...extra });

  it('304 keeps the cached copy, a new ETag replaces it, an unreachable server falls back to it', async () => {
    const cache = new MemoryFileCache();
    await load(cache);
    expect(await same(await load(cache), body)).toBe(true);
    const check = server.requestsFor(path).at(-1)!;
    expect(check.ifNoneMatch).toBe(server.files.get(path)!.etag);
    expect(check.status).toBe(304);

    const trained = patternBytes(SIZE, 7);
    server.put(path, trained, '"trained"');
    expect(await same(await load(cache), trained)).toBe(true);
    expect(await same(await cache.get('bundled', 'model.safetensors'), trained)).toBe(true);

    const offline = await load(cache, { url: 'http://127.0.0.1:9/model.safetensors', retries: 0 });
    expect(await same(offline, trained)).toBe(true);
  });
});

describe('a cache that runs out of room', () => {
  it('fails the download at once, without retrying, naming the file; removing a model frees room', async () => {
    server.put('/org/other/resolve/main/model.safetensors', patternBytes(SIZE, 3));
    const cache = new MemoryFileCache(1.5 * SIZE);
    expect(await same(await source(cache).open('model.safetensors'), body)).toBe(true);
    const other = new UrlSource('org/other', { hfBase: server.base, cache, chunkBytes: 64 << 10, retryDelayMs: 5 });
    const before = server.log.length;
    await expect(other.open('model.safetensors')).rejects.toThrow('Not enough room to cache org/other/model.safetensors');
    expect(server.log.length - before).toBe(1);
    await cache.removeModel('org/model');
    expect((await other.open('model.safetensors'))!.size).toBe(SIZE);
  });
});

describe('a cache that is optional (the bundled models, issue 26)', () => {
  it('loads the file without caching it when the cache is full, and says so', async () => {
    const cache = new MemoryFileCache(SIZE / 2);
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (m: string) => warnings.push(m);
    try {
      const url = `${server.base}/org/model/resolve/main/model.safetensors`;
      const opts = { url, file: 'model.safetensors', modelId: 'bundled:org/model', cache, chunkBytes: 64 << 10, retryDelayMs: 5 };
      const file = await downloadFile({ ...opts, cacheOptional: true });
      expect(await same(file, body)).toBe(true);
      expect(warnings).toEqual([
        expect.stringMatching(/^\[hearth\] model\.safetensors of bundled:org\/model is loaded without caching it: Not enough room/),
      ]);
      // Nothing of it stays in the cache; without cacheOptional the same download fails.
      expect(await cache.partial('bundled:org/model', 'model.safetensors')).toBeNull();
      await expect(downloadFile(opts)).rejects.toThrow('Not enough room to cache');
    } finally {
      console.warn = warn;
    }
  });
});

describe('Content-Range parsing', () => {
  it('reads start and total', () => {
    expect(parseContentRange('bytes 100-199/1000')).toEqual({ start: 100, total: 1000 });
    expect(parseContentRange('bytes */1000')).toEqual({ start: null, total: 1000 });
    expect(parseContentRange('bytes 0-9/*')).toEqual({ start: 0, total: null });
    expect(parseContentRange('nonsense')).toBeNull();
  });
});
