/**
 * downloadFile: one model file over HTTP into a ModelFileCache, with progress, resuming and
 * offline reuse.
 * - A complete cached copy is returned without touching the network.
 * - Bytes are written to the cache in chunks as they arrive, so an interruption (a dropped
 *   connection, a closed tab, an abort) loses at most one chunk. The next attempt, in this call
 *   (a few retries with backoff) or in a later load, asks for the rest with `Range: bytes=N-` and
 *   `If-Range: <validator>`; a 200 answer means the server ignored the range or the file changed,
 *   and the download restarts from zero.
 * - With `revalidate` (files that change with the app, like the bundled models), a cached copy is
 *   checked with If-None-Match / If-Modified-Since: 304 keeps it, 200 replaces it, and when the
 *   network is unreachable the cached copy is used (offline).
 * - A failure to write the cache (storage quota) is not retried: it is reported at once; or, with
 *   `cacheOptional` (files that can be fetched again any time, such as the bundled models), the
 *   cache is skipped with a warning and the file is downloaded again into memory, so a full
 *   storage never keeps a model from loading (issue 26).
 * - 404 means the repository has no such file (null), remembered in the cache so the next load
 *   does not ask again (and works offline); 401/403 means a private, gated or missing repository.
 * Not here: where the cache lives (file-cache.ts, src/store/model-files.ts), URL building (url-source.ts).
 */
import { MemoryFileCache, type ChunkOrigin, type ModelFileCache } from './file-cache';
import { SourceError, type FileRequest } from './source';

export interface DownloadOptions extends FileRequest {
  url: string;
  /** File name in the repository: the cache key (with modelId) and the name in progress events. */
  file: string;
  modelId: string;
  /** null: keep the bytes in memory for this call only (still resumes across retries). */
  cache?: ModelFileCache | null;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  /** Bytes gathered before each cache write (default 4 MiB). */
  chunkBytes?: number;
  /** Resumed attempts after a failure mid-way (default 4). */
  retries?: number;
  /** First retry delay; doubles each time (default 500 ms). */
  retryDelayMs?: number;
  /** Check a cached copy with the server before using it (see the header). */
  revalidate?: boolean;
  /** A refused cache write is not an error: the file comes into memory instead (see the header). */
  cacheOptional?: boolean;
}

/** The cache refused a write; wraps the cache's own error so it is not mistaken for a network drop. */
class CacheWriteFailure extends Error {
  constructor(readonly original: unknown) {
    super('cache write failed');
  }
}

const DEFAULT_CHUNK = 4 << 20;

/** What one request came to: the file (null: the repository has none), or why to try again. */
type Attempt = { file: Blob | null } | { retry: string };

export async function downloadFile(o: DownloadOptions): Promise<Blob | null> {
  const download = new Download(o);
  const cached = await download.fromCache();
  if (cached) return cached.file;
  for (;;) {
    o.signal?.throwIfAborted();
    let attempt: Attempt;
    try {
      attempt = await download.attempt();
    } catch (e) {
      if (!download.withoutCache(e)) throw e;
      continue;
    }
    if ('file' in attempt) return attempt.file;
    await download.retryAfter(attempt.retry);
  }
}

/** One call of downloadFile: the cache lookup, then requests until the file is stored or the retries run out. */
class Download {
  private readonly fetchFn: typeof fetch;
  private store: ModelFileCache;
  /** The cache refused a write and `cacheOptional` let the file go on in memory. */
  private uncached = false;
  private readonly progress: ProgressMeter;
  private failures = 0;

  constructor(private readonly o: DownloadOptions) {
    this.fetchFn = o.fetch ?? globalThis.fetch.bind(globalThis);
    this.store = o.cache ?? new MemoryFileCache();
    this.progress = new ProgressMeter(o.file, o.onProgress);
  }

  /** The answer the cache alone gives: a complete copy (still valid), or a file known to be missing; null: download. */
  async fromCache(): Promise<{ file: Blob | null } | null> {
    const { o } = this;
    if (!o.cache) return null;
    const hit = await o.cache.get(o.modelId, o.file);
    if (hit && (!o.revalidate || (await stillValid(o, this.fetchFn, o.cache)))) {
      o.onProgress?.({ file: o.file, loaded: hit.size, total: hit.size, bytesPerSecond: 0, fromCache: true });
      return { file: hit };
    }
    if (hit) await o.cache.discard(o.modelId, o.file);
    else if (!o.revalidate && (await o.cache.isMissing(o.modelId, o.file))) return { file: null };
    return null;
  }

  /**
   * With `cacheOptional`, after the cache refused a write (`failure`): warns, drops what the cache
   * holds of the file, and goes on in memory (the next attempt starts over). Whether it did.
   */
  withoutCache(failure: unknown): boolean {
    const { o } = this;
    if (!o.cacheOptional || !(failure instanceof CacheWriteFailure) || this.uncached) return false;
    this.uncached = true;
    const why = (failure.original as Error)?.message ?? String(failure.original);
    console.warn(`[hearth] ${o.file} of ${o.modelId} is loaded without caching it: ${why}`);
    void this.store.discard(o.modelId, o.file).catch(() => undefined);
    this.store = new MemoryFileCache();
    return true;
  }

  /** Waits before the next attempt (doubling each time), or gives up after `retries` failures. */
  async retryAfter(why: string): Promise<void> {
    const { o } = this;
    if (++this.failures > (o.retries ?? 4)) throw new SourceError(`${o.file}: ${why}; loading the model again resumes where this stopped`);
    await sleep((o.retryDelayMs ?? 500) * 2 ** (this.failures - 1), o.signal);
  }

  /** One request for what the store does not hold yet: ask, read the answer, store the body. */
  async attempt(): Promise<Attempt> {
    // Called as a plain function: a worker's own fetch throws "Illegal invocation" with another `this`.
    const { o, fetchFn } = this;
    const partial = await this.store.partial(o.modelId, o.file);
    const offset = partial?.bytes ?? 0;
    const headers = new Headers(o.headers);
    if (offset > 0) {
      headers.set('Range', `bytes=${offset}-`);
      if (partial?.validator) headers.set('If-Range', partial.validator);
    }
    let res: Response;
    try {
      res = await fetchFn(o.url, { headers, signal: o.signal });
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      return { retry: `cannot reach ${o.url} (${(e as Error).message})` };
    }
    const body = await this.accept(res, offset);
    return 'start' in body ? this.receive(res, body.start, body.total) : body;
  }

  /**
   * What an answer means: the end of the download (404: no such file; 416: the store already holds
   * it all), a reason to retry, or where its body starts in the file and the file's size. Throws
   * when the server refuses.
   */
  private async accept(res: Response, offset: number): Promise<Attempt | { start: number; total: number | null }> {
    const { o, store } = this;
    if (res.status === 404) {
      await res.body?.cancel();
      await store.markMissing(o.modelId, o.file);
      return { file: null };
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new SourceError(`${o.file}: ${o.url} answered ${res.status}: the repository is private, gated, or does not exist`, res.status);
    }
    if (res.status === 416 && offset > 0) {
      // Nothing left to send: the stored bytes may already be the whole file.
      await res.body?.cancel();
      const range = parseContentRange(res.headers.get('Content-Range'));
      if (range?.total === offset) return { file: await store.complete(o.modelId, o.file) };
      await store.discard(o.modelId, o.file);
      return { retry: 'the server refused to resume the download' };
    }
    if (res.status === 206) {
      const range = parseContentRange(res.headers.get('Content-Range'));
      if (!range || range.start !== offset) {
        await res.body?.cancel();
        await store.discard(o.modelId, o.file);
        return { retry: `the server resumed at the wrong offset (${res.headers.get('Content-Range')})` };
      }
      return { start: offset, total: range.total };
    }
    if (res.ok) {
      // The server sent the whole file: it ignores ranges, or the file changed (If-Range failed).
      if (offset > 0) await store.discard(o.modelId, o.file);
      return { start: 0, total: bodyLength(res) };
    }
    await res.body?.cancel();
    if (res.status >= 500 || res.status === 429) return { retry: `${o.url} answered ${res.status}` };
    throw new SourceError(`${o.file}: ${o.url} answered ${res.status} ${res.statusText}`.trim(), res.status);
  }

  /** Streams the body into the store from byte `start`; what arrived before a drop is kept for the next attempt. */
  private async receive(res: Response, start: number, total: number | null): Promise<Attempt> {
    const { o, store } = this;
    if (!res.body) throw new SourceError(`${o.file}: ${o.url} sent no body`);
    const chunks = new ChunkedAppend(store, o, start, { validator: responseValidator(res), total, url: o.url });
    this.progress.start(chunks.loaded);
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.add(value);
        this.progress.update(chunks.loaded, total);
        if (chunks.full) await chunks.flush();
      }
      await chunks.flush();
    } catch (e) {
      if (e instanceof CacheWriteFailure) {
        await reader.cancel().catch(() => {});
        throw o.cacheOptional ? e : e.original;
      }
      await chunks.flush().catch(() => {});
      if (o.signal?.aborted) throw o.signal.reason;
      return { retry: `download interrupted after ${chunks.loaded} of ${total ?? '?'} bytes (${(e as Error).message})` };
    }
    const loaded = chunks.loaded;
    if (total != null && loaded < total) return { retry: `the connection closed after ${loaded} of ${total} bytes` };
    if (total != null && loaded > total) {
      await store.discard(o.modelId, o.file);
      throw new SourceError(`${o.file}: received ${loaded} bytes but the server announced ${total}`);
    }
    this.progress.update(loaded, loaded, true);
    try {
      return { file: await store.complete(o.modelId, o.file) };
    } catch (e) {
      throw o.cacheOptional ? new CacheWriteFailure(e) : e;
    }
  }
}

/** A body's bytes, appended to the store `chunkBytes` at a time (so a drop loses at most one chunk). */
class ChunkedAppend {
  /** Bytes of the file received so far (stored or pending). */
  loaded: number;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private readonly chunkBytes: number;

  constructor(
    private readonly store: ModelFileCache,
    private readonly o: DownloadOptions,
    start: number,
    private readonly meta: ChunkOrigin,
  ) {
    this.loaded = start;
    this.chunkBytes = o.chunkBytes ?? DEFAULT_CHUNK;
  }

  add(value: Uint8Array): void {
    this.pending.push(value);
    this.pendingBytes += value.byteLength;
    this.loaded += value.byteLength;
  }

  /** A chunk's worth is pending: time to flush. */
  get full(): boolean {
    return this.pendingBytes >= this.chunkBytes;
  }

  /** Writes what is pending; a refused write is a CacheWriteFailure (not retried). */
  async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const data = concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    try {
      await this.store.append(this.o.modelId, this.o.file, this.loaded - data.byteLength, data, { ...this.meta });
    } catch (e) {
      throw new CacheWriteFailure(e);
    }
  }
}

/**
 * Revalidation of a cached file: true when the server answers 304 (unchanged) or cannot be
 * reached (offline: the cached copy is all there is); false when it sends a new version.
 */
async function stillValid(o: DownloadOptions, fetchFn: typeof fetch, cache: ModelFileCache): Promise<boolean> {
  const stored = await cache.partial(o.modelId, o.file);
  const headers = new Headers(o.headers);
  const v = stored?.validator;
  if (v) headers.set(v.startsWith('"') || v.startsWith('W/') ? 'If-None-Match' : 'If-Modified-Since', v);
  let res: Response;
  try {
    res = await fetchFn(o.url, { headers, signal: o.signal });
  } catch (e) {
    if (o.signal?.aborted) throw o.signal.reason;
    return true;
  }
  await res.body?.cancel();
  if (res.status === 304) return true;
  // A new version (200), or a server error while we hold a complete copy: prefer the copy unless replaced.
  return !res.ok;
}

/** Content-Range: "bytes 0-99/1234", or "bytes (star)/1234" on a 416. */
export function parseContentRange(value: string | null): { start: number | null; total: number | null } | null {
  const m = value?.match(/^bytes\s+(?:(\d+)-(\d+)|\*)\/(\d+|\*)$/i);
  if (!m) return null;
  return { start: m[1] != null ? Number(m[1]) : null, total: m[3] === '*' ? null : Number(m[3]) };
}

/** Content-Length counts the encoded body; it is the file size only without a content encoding. */
function bodyLength(res: Response): number | null {
  const encoding = res.headers.get('Content-Encoding');
  if (encoding && encoding !== 'identity') return null;
  const n = Number(res.headers.get('Content-Length'));
  return Number.isFinite(n) && res.headers.has('Content-Length') ? n : null;
}

/** If-Range needs a strong ETag or a Last-Modified date; weak ETags cannot be used. */
export function responseValidator(res: Response): string | null {
  const etag = res.headers.get('ETag');
  if (etag && !etag.startsWith('W/')) return etag;
  return res.headers.get('Last-Modified');
}

function concat(parts: Uint8Array[], bytes: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** Throttled progress events with the rate over the last two seconds. */
class ProgressMeter {
  private samples: Array<[number, number]> = [];
  private lastEmit = -Infinity;

  constructor(
    private readonly file: string,
    private readonly onProgress?: (p: { file: string; loaded: number; total: number | null; bytesPerSecond: number }) => void,
  ) {}

  start(loaded: number): void {
    this.samples = [[now(), loaded]];
  }

  update(loaded: number, total: number | null, final = false): void {
    if (!this.onProgress) return;
    const t = now();
    this.samples.push([t, loaded]);
    while (this.samples.length > 2 && t - this.samples[0][0] > 2000) this.samples.shift();
    if (!final && t - this.lastEmit < 100) return;
    this.lastEmit = t;
    const [t0, l0] = this.samples[0];
    const bytesPerSecond = t > t0 ? ((loaded - l0) * 1000) / (t - t0) : 0;
    this.onProgress({ file: this.file, loaded, total, bytesPerSecond });
  }
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
