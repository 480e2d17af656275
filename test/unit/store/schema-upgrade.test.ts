// Upgrading an existing database: a version-2 database (issue 6's stores, with data) opened by
// this version gains the stores of versions 3 and 4 and keeps every record it had; a version-3
// database's trajectory logs and run histories move into version 4's per-group and append-only
// records, read back through the same paging the API uses.
import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { ALL_STORES, type StoreName } from '../../../src/store/schema';
import { DB_VERSION, openHearthDb } from '../../../src/store/open-db';
import { UnknownCursorError } from '../../../src/store/page';
import { pageTrajectoryGroups, runHistory } from '../../../src/store/trajectory-logs';

/** Stores versions 4 and later create: absent from the older databases these tests build. */
const V4_STORES: StoreName[] = ['trajectoryGroups', 'runHistory', 'settings'];

describe('the upgrade ladder', () => {
  it('upgrades a version-2 database to the current version, keeping its records', async () => {
    const name = 'schema-upgrade-v2';
    const old = await openDB(name, 2, {
      upgrade(db) {
        // The stores versions 1 and 2 created (the ones this test reads back carry their indexes).
        for (const store of ALL_STORES.filter((s) => s !== 'baseModels' && !V4_STORES.includes(s))) {
          db.createObjectStore(store, { keyPath: store === 'jobProgress' ? 'jobId' : 'id' });
        }
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
      id: 'org/name',
      source: 'url',
      location: 'http://x/',
      revision: null,
      hfBase: null,
      cacheKey: 'http://x/',
      status: 'downloading',
      error: null,
      architecture: null,
      parameters: null,
      bytes: null,
      maxPositionEmbeddings: null,
      startedAt: 1,
      updatedAt: 1,
    });
    expect((await db.getAll('baseModels')).map((r) => r.id)).toEqual(['org/name']);
    db.close();
  });

  it("moves a version-3 database's logged groups and run history into version 4's records", async () => {
    const name = 'schema-upgrade-v3';
    const old = await openDB(name, 3, {
      upgrade(db) {
        for (const store of ALL_STORES.filter((s) => !V4_STORES.includes(s))) {
          const created = db.createObjectStore(store, { keyPath: store === 'jobProgress' ? 'jobId' : 'id' });
          if (store === 'trajectoryLogs') created.createIndex('by-model', 'modelId');
        }
      },
    });
    const log = (id: string, modelId: string, split: string, step: number, createdAt: number, groups: unknown[]) =>
      old.put('trajectoryLogs', { id, modelId, principalId: 'p1', split, step, groups, metrics: { [`${split}/reward`]: 1 }, createdAt });
    // Stored out of time order: the logging order is the time order.
    await log('b', 'm1', 'val', 1, 20, [{ n: 3 }]);
    await log('a', 'm1', 'train', 0, 10, [{ n: 1 }, { n: 2 }]);
    await log('c', 'm2', 'train', 0, 15, [{ n: 9 }]);
    const history = [
      { step: 0, metrics: { 'train/reward': 1 }, recordedAt: 10 },
      { step: 1, metrics: { 'val/reward': 1 }, recordedAt: 20 },
    ];
    await old.put('runs', { id: 'r1', modelId: 'm1', principalId: 'p1', createdAt: 1, history });
    old.close();

    const db = await openHearthDb(name);
    expect(db.version).toBe(DB_VERSION);
    const page = await pageTrajectoryGroups(db, 'm1', { limit: 2 });
    expect(page.items.map((g) => [g.id, g.split, g.step, g.loggedAt, g.group])).toEqual([
      ['a:0', 'train', 0, 10, { n: 1 }],
      ['a:1', 'train', 0, 10, { n: 2 }],
    ]);
    expect(page.hasMore).toBe(true);
    const next = await pageTrajectoryGroups(db, 'm1', { limit: 2, after: 'a:1' });
    expect(next.items.map((g) => g.id)).toEqual(['b:0']);
    expect(next.hasMore).toBe(false);
    expect((await pageTrajectoryGroups(db, 'm1', { limit: 5, split: 'val', step: 1 })).items.map((g) => g.id)).toEqual(['b:0']);
    expect((await pageTrajectoryGroups(db, 'm2', { limit: 5 })).items.map((g) => g.id)).toEqual(['c:0']);
    // A cursor outside the filtered list is refused, as before.
    await expect(pageTrajectoryGroups(db, 'm1', { limit: 5, split: 'val', after: 'a:0' })).rejects.toBeInstanceOf(UnknownCursorError);
    expect(await runHistory(db, 'r1')).toEqual(history);
    expect(await db.get('runs', 'r1')).not.toHaveProperty('history');
    expect(await db.get('trajectoryLogs', 'a')).toMatchObject({ numGroups: 2 });
    expect(await db.get('trajectoryLogs', 'a')).not.toHaveProperty('groups');
    db.close();
  });
});
