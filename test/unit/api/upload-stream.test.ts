// Request bodies as the engine reads them (issue 10, items 2 and 6): a request with a missing or
// bad key is refused before its body is read, and a base-model upload goes to the model-file
// cache while its body is still arriving, cut with a 413 the moment it passes its cap, with
// nothing of it kept. Bodies are streams that count what was pulled from them.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { ORIGIN, startEngine } from './engine-fixture';

const TINY_CHAT = fileURLToPath(new URL('../../../public/models/tiny-chat/', import.meta.url));

/** `bytes` as a stream of 64 KiB chunks; `pulled()` is how many bytes were handed out, `onPull` runs before each. */
function counted(bytes: Uint8Array, onPull?: (pulled: number) => Promise<void>) {
  let at = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      await onPull?.(at);
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, (at += 64 * 1024)));
    },
  });
  return { stream, pulled: () => at };
}

async function tinyChatForm(extra?: [string, Uint8Array]): Promise<{ bytes: Uint8Array; type: string }> {
  const form = new FormData();
  for (const name of await readdir(TINY_CHAT)) form.append('file', new File([await readFile(TINY_CHAT + name)], name));
  if (extra) form.append('file', new File([extra[1] as BlobPart], extra[0]));
  const res = new Response(form);
  return { bytes: new Uint8Array(await res.arrayBuffer()), type: res.headers.get('Content-Type')! };
}

const post = (e: Awaited<ReturnType<typeof startEngine>>, path: string, key: string | null, body: ReadableStream, type: string) =>
  e.app.request(`${ORIGIN}${path}`, {
    method: 'POST',
    headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), 'Content-Type': type },
    body,
    duplex: 'half',
  } as RequestInit);

describe('request bodies', () => {
  it('are not read when the key is missing or bad (401), nor for an upload by a key that is not the admin (403)', async () => {
    const e = await startEngine();
    try {
      const other = (await e.call('POST', '/v1/preview/api-keys', { body: { name: 'other' } })).json.key;
      const big = new Uint8Array(8 << 20).fill(0x20);
      for (const [key, path, status] of [
        [null, '/v1/chat/completions', 401],
        ['sk-wrong', '/v1/preview/models', 401],
        [other, '/v1/preview/base-models/files', 403],
      ] as const) {
        const body = counted(big);
        const res = await post(e, path, key, body.stream, 'multipart/form-data; boundary=x');
        expect(res.status, path).toBe(status);
        // Streams pull a chunk or two ahead on their own (a Request re-made with a new signal
        // pipes its body); the app read none of the 8 MiB.
        expect(body.pulled(), path).toBeLessThanOrEqual(256 * 1024);
      }
    } finally {
      await e.close();
    }
  });

  it('stores an upload while its body streams in', async () => {
    const cache = new MemoryFileCache();
    const e = await startEngine({ modelFiles: cache });
    try {
      // A 6 MiB file last: the body waits, half-sent, until the cache holds the upload's first 4 MiB chunk.
      const form = await tinyChatForm(['extra.bin', new Uint8Array(6 << 20).fill(1)]);
      let storedWhileSending = false;
      const body = counted(form.bytes, async (pulled) => {
        if (pulled < form.bytes.length - (1 << 20) || storedWhileSending) return;
        for (let i = 0; i < 200 && !storedWhileSending; i++) {
          const files = (await cache.listModels()).flatMap((m) => m.files);
          storedWhileSending = files.some((f) => f.file === 'extra.bin' && f.bytes >= 4 << 20);
          if (!storedWhileSending) await new Promise((r) => setTimeout(r, 5));
        }
      });
      const res = await post(e, '/v1/preview/base-models/files', e.adminKey, body.stream, form.type);
      expect(res.status, await res.clone().text()).toBe(201);
      expect(storedWhileSending).toBe(true);
    } finally {
      await e.close();
    }
  });

  it('cuts an upload at its cap with a 413 as soon as it passes it, and keeps nothing of it', async () => {
    const cache = new MemoryFileCache();
    const e = await startEngine({ modelFiles: cache, maxUploadBytes: 3 << 20 });
    try {
      const form = await tinyChatForm(['extra.bin', new Uint8Array(64 << 20)]);
      const body = counted(form.bytes);
      // No Content-Length: only the count while streaming can stop it.
      const res = await post(e, '/v1/preview/base-models/files', e.adminKey, body.stream, form.type);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({
        detail: `The upload is larger than ${3 << 20} bytes: load a model this large from a URL instead.`,
      });
      expect(body.pulled()).toBeLessThan(4 << 20);
      expect(await cache.listModels()).toEqual([]);
      expect((await e.call('GET', '/v1/preview/base-models')).json.data.some((m: { id: string }) => m.id.startsWith('local/'))).toBe(false);
    } finally {
      await e.close();
    }
  });
});
