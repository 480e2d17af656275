// Base models when the browser's storage quota runs out (issue 10, item 9): an upload answers 507
// and keeps none of its files; a download pauses (not "error"), keeps its stored chunks, and
// resumes from them once there is room. The model-file cache is in memory with a byte quota that
// throws the IndexedDB cache's own ModelFilesQuotaError.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { ModelFilesQuotaError } from '../../../src/store/model-files';
import { ORIGIN, staticFetch, startEngine } from './engine-fixture';

const TINY_CHAT = fileURLToPath(new URL('../../../public/models/tiny-chat/', import.meta.url));

class QuotaCache extends MemoryFileCache {
  used = 0;
  constructor(public quota: number) {
    super();
  }
  override async append(
    modelId: string,
    file: string,
    offset: number,
    data: Uint8Array,
    meta: { validator: string | null; total: number | null; url: string },
  ): Promise<void> {
    if (this.used + data.byteLength > this.quota) throw new ModelFilesQuotaError(modelId, file);
    await super.append(modelId, file, offset, data, meta);
    this.used += data.byteLength;
  }
  override async removeModel(modelId: string): Promise<void> {
    const info = (await this.listModels()).find((m) => m.modelId === modelId);
    this.used -= info?.bytes ?? 0;
    await super.removeModel(modelId);
  }
}

/** The app's static files with an ETag, Range support and a streamed body; `ranges` logs every ranged request. */
function rangedFetch(ranges: string[]): typeof fetch {
  return async (input, init) => {
    const res = await staticFetch(input, init);
    if (!res.ok) return res;
    const bytes = new Uint8Array(await res.arrayBuffer());
    const range = /^bytes=(\d+)-$/.exec(new Headers(init?.headers).get('Range') ?? '');
    const start = range ? Number(range[1]) : 0;
    if (range) ranges.push(`${new URL(String(input instanceof Request ? input.url : input)).pathname} ${range[0]}`);
    const headers: Record<string, string> = { ETag: '"v1"', 'Content-Length': String(bytes.byteLength - start) };
    if (start > 0) headers['Content-Range'] = `bytes ${start}-${bytes.byteLength - 1}/${bytes.byteLength}`;
    // In 1 MiB pieces, as a network delivers them, so the downloader stores 4 MiB chunks as they fill.
    const rest = bytes.subarray(start);
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (at >= rest.byteLength) return c.close();
        c.enqueue(rest.slice(at, (at += 1 << 20)));
      },
    });
    return new Response(body, { status: start > 0 ? 206 : 200, headers });
  };
}

describe('storage quota', () => {
  it('answers 507 to an upload that does not fit, and keeps none of its files', async () => {
    const cache = new QuotaCache(1 << 20);
    const e = await startEngine({ modelFiles: cache });
    try {
      const form = new FormData();
      for (const name of await readdir(TINY_CHAT)) form.append('file', new File([await readFile(TINY_CHAT + name)], name));
      const res = await e.app.request(`${ORIGIN}/v1/preview/base-models/files`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${e.adminKey}` },
        body: form,
      });
      expect(res.status).toBe(507);
      expect((await res.json()).detail).toMatch(/Not enough browser storage/);
      expect(await cache.listModels()).toEqual([]);
      expect((await e.call('GET', '/v1/preview/base-models')).json.data.some((m: { id: string }) => m.id.startsWith('local/'))).toBe(false);
    } finally {
      await e.close();
    }
  });

  it('pauses a download that hits the quota, keeps what it stored, and resumes from there', async () => {
    const cache = new QuotaCache(5 << 20);
    const ranges: string[] = [];
    const e = await startEngine({ modelFiles: cache, fetch: rangedFetch(ranges) });
    try {
      const url = `${ORIGIN}/models/tiny-chat/`;
      expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } })).status).toBe(202);
      await e.services.baseModels!.idle();
      const paused = (await e.call('GET', '/v1/preview/base-models')).json.data.find((m: { id: string }) => m.id === url);
      expect(paused).toMatchObject({ status: 'paused', download: { error: expect.stringMatching(/Not enough browser storage/) } });
      const kept = cache.used;
      expect(kept).toBeGreaterThan(0);

      cache.quota = 64 << 20; // room again: POSTing the source resumes it
      expect((await e.call('POST', '/v1/preview/base-models', { body: { source: { type: 'url', url } } })).status).toBe(202);
      await e.services.baseModels!.idle();
      const done = (await e.call('GET', '/v1/preview/base-models')).json.data.find((m: { id: string }) => m.id === url);
      expect(done.status).toBe('cached');
      expect(cache.used).toBe(done.cached_bytes);
      // The weights continued from the bytes stored before the quota ran out.
      expect(
        ranges.some((r) => /model\.safetensors bytes=[1-9]\d*-$/.test(r)),
        ranges.join(', '),
      ).toBe(true);
    } finally {
      await e.close();
    }
  });
});
