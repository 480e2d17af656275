// Upgrading an existing database: a version-2 database (issue 6's stores, with data) opened by
// this version gains the base-model store of version 3 and keeps every record it had.
import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { ALL_STORES, DB_VERSION, openHearthDb } from '../../../src/store/schema';

describe('the upgrade ladder', () => {
  it('upgrades a version-2 database to the current version, keeping its records', async () => {
    const name = 'schema-upgrade-v2';
    const old = await openDB(name, 2, {
      upgrade(db) {
        // The stores versions 1 and 2 created (the ones this test reads back carry their indexes).
        for (const store of ALL_STORES.filter((s) => s !== 'baseModels')) db.createObjectStore(store, { keyPath: store === 'jobProgress' ? 'jobId' : 'id' });
      },
    });
    await old.put('principals', { id: 'p1', name: 'admin', entity: 'e', admin: true, createdAt: 1 });
    await old.put('jobProgress', { jobId: 'j1', modelId: 'm1', stepsDone: 3 });
    old.close();

    const db = await openHearthDb(name);
    expect(db.version).toBe(DB_VERSION);
    expect(db.objectStoreNames.contains('baseModels')).toBe(true);
    expect(await db.get('principals', 'p1')).toMatchObject({ name: 'admin', admin: true });
    expect(await db.get('jobProgress', 'j1')).toMatchObject({ stepsDone: 3 });
    await db.put('baseModels', {
      id: 'org/name', source: 'url', location: 'http://x/', revision: null, hfBase: null, cacheKey: 'http://x/', status: 'downloading', error: null,
      architecture: null, parameters: null, bytes: null, maxPositionEmbeddings: null, startedAt: 1, updatedAt: 1,
    });
    expect((await db.getAll('baseModels')).map((r) => r.id)).toEqual(['org/name']);
    db.close();
  });
});
