// The database schema: a first open creates every store, reopening keeps the data, and an open
// connection steps aside when a newer app version upgrades the database (so an old engine tab
// never blocks the upgrade forever).
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { ALL_STORES } from '../../../src/store/schema';
import { closedForUpgrade, DB_VERSION, openHearthDb } from '../../../src/store/open-db';

describe('openHearthDb', () => {
  it('creates every store at the current version and keeps data across opens', async () => {
    const db = await openHearthDb('schema-test-1');
    expect(db.version).toBe(DB_VERSION);
    expect([...db.objectStoreNames].sort()).toEqual([...ALL_STORES].sort());
    await db.put('principals', { id: 'p', name: 'n', entity: 'e', admin: false, createdAt: 1 });
    db.close();
    const again = await openHearthDb('schema-test-1');
    expect(await again.get('principals', 'p')).toMatchObject({ name: 'n' });
    again.close();
  });

  it('closes itself when a newer version of the database is opened elsewhere', async () => {
    const db = await openHearthDb('schema-test-2');
    const upgraded = await new Promise<number>((resolve, reject) => {
      const req = indexedDB.open('schema-test-2', DB_VERSION + 1);
      req.onupgradeneeded = () => undefined;
      req.onsuccess = () => {
        resolve(req.result.version);
        req.result.close();
      };
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error('the upgrade was blocked by the open connection'));
    });
    expect(upgraded).toBe(DB_VERSION + 1);
    expect(() => db.transaction('principals')).toThrow(/An operation was called on an object/);
    expect(closedForUpgrade(db)).toBe(true);
  });
});
