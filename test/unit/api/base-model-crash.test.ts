// Crash-safe base-model upload and removal across the two databases (issue 10, item 11): the
// engine is killed right after the first of the two writes (the model-file cache stops answering,
// as a closed tab would), then a new engine starts over the same database and cache. Nothing may
// be left half: no record whose files are gone, no files that no record owns.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { ORIGIN, startEngine } from './engine-fixture';

const TINY_CHAT = fileURLToPath(new URL('../../../public/models/tiny-chat/', import.meta.url));

/**
 * A cache whose engine dies when `kill` says so, before or after a call runs; from then on
 * nothing answers (a closed tab runs no catch block's clean-up either).
 */
class KillableCache extends MemoryFileCache {
  dead = false;
  kill: ((method: string, when: 'before' | 'after') => boolean) | undefined;
  private async step<T>(method: string, run: () => Promise<T>): Promise<T> {
    if (this.dead || this.kill?.(method, 'before')) {
      this.dead = true;
      throw new Error('the engine was killed');
    }
    const out = await run();
    if (this.kill?.(method, 'after')) {
      this.dead = true;
      throw new Error('the engine was killed');
    }
    return out;
  }
  override append(...a: Parameters<MemoryFileCache['append']>) {
    return this.step('append', () => super.append(...a));
  }
  override complete(...a: Parameters<MemoryFileCache['complete']>) {
    return this.step('complete', () => super.complete(...a));
  }
  override get(...a: Parameters<MemoryFileCache['get']>) {
    return this.step('get', () => super.get(...a));
  }
  override removeModel(...a: Parameters<MemoryFileCache['removeModel']>) {
    return this.step('removeModel', () => super.removeModel(...a));
  }
  /** The engine comes back (a new tab). */
  revive(): void {
    this.dead = false;
    this.kill = undefined;
  }
}

async function upload(e: Awaited<ReturnType<typeof startEngine>>, id: string): Promise<number> {
  const form = new FormData();
  form.append('id', id);
  for (const name of await readdir(TINY_CHAT)) form.append('file', new File([await readFile(TINY_CHAT + name)], name));
  const res = await e.app.request(`${ORIGIN}/v1/preview/base-models/files`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${e.adminKey}` },
    body: form,
  });
  return res.status;
}

/**
 * Starts the next engine over the same database and cache and checks they agree: either the
 * model is there with all its files, or neither it nor any file of it is. Returns which.
 */
async function consistentAfterRestart(dbName: string, cache: KillableCache, id: string): Promise<'present' | 'absent'> {
  cache.revive();
  const next = await startEngine({ dbName, modelFiles: cache });
  try {
    await next.services.baseModels!.idle();
    const entry = (await next.call('GET', '/v1/preview/base-models')).json.data.find((m: { id: string }) => m.id === id);
    const keys = (await cache.listModels()).map((m) => m.modelId);
    if (!entry) {
      expect(keys, 'files that no record owns').toEqual([]);
      return 'absent';
    }
    expect(entry.status).toBe('cached');
    expect(entry.cached_bytes, 'a record whose files are gone').toBeGreaterThanOrEqual(entry.bytes);
    return 'present';
  } finally {
    await next.close();
  }
}

describe('an engine killed between the two writes', () => {
  it('of an upload (files, then record) leaves no files behind once the next engine starts', async () => {
    const dbName = `hearth-crash-upload-${process.pid}`;
    const cache = new KillableCache();
    const e = await startEngine({ dbName, modelFiles: cache });
    const files = (await readdir(TINY_CHAT)).length;
    let completed = 0;
    cache.kill = (m, when) => m === 'complete' && when === 'after' && ++completed === files;
    expect(await upload(e, 'local/crash')).toBe(500);
    await e.close();
    expect(await consistentAfterRestart(dbName, cache, 'local/crash')).toBe('absent');
  });

  for (const when of ['before', 'after'] as const) {
    it(`of a removal (killed ${when} the files go) leaves the model whole or gone, never half`, async () => {
      const dbName = `hearth-crash-remove-${when}-${process.pid}`;
      const cache = new KillableCache();
      const e = await startEngine({ dbName, modelFiles: cache });
      expect(await upload(e, 'local/doomed')).toBe(201);
      cache.kill = (m, w) => m === 'removeModel' && w === when;
      expect((await e.call('DELETE', '/v1/preview/base-models/local%2Fdoomed')).status).toBe(500);
      await e.close();
      // The record went first, so the removal counts as done: the next start sweeps the files.
      expect(await consistentAfterRestart(dbName, cache, 'local/doomed')).toBe('absent');
    });
  }
});
