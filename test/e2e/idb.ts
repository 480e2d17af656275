// Reading and seeding Hearth's real IndexedDB from inside a page, for e2e assertions that no
// record is left orphaned. Plain IndexedDB API (the page has no idb import); records follow
// src/store/schema.ts.
import type { Page } from 'playwright-core';

/** Every record of every store of the "hearth" database. */
export async function dumpHearthDb(page: Page): Promise<Record<string, any[]>> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((ok, fail) => {
      const req = indexedDB.open('hearth');
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    const out: Record<string, unknown[]> = {};
    for (const name of Array.from(db.objectStoreNames)) {
      out[name] = await new Promise<unknown[]>((ok, fail) => {
        const req = db.transaction(name).objectStore(name).getAll();
        req.onsuccess = () =>
          ok(req.result.map((r: Record<string, unknown>) => ({ ...r, bytes: r.bytes ? (r.bytes as ArrayBuffer).byteLength : undefined })));
        req.onerror = () => fail(req.error);
      });
    }
    db.close();
    return out;
  });
}

/** Writes records into stores in one transaction (e.g. trained checkpoints, which no endpoint creates yet). */
export async function seedHearthDb(page: Page, records: { store: string; value: unknown; bytes?: number }[]): Promise<void> {
  await page.evaluate(async (records) => {
    const db = await new Promise<IDBDatabase>((ok, fail) => {
      const req = indexedDB.open('hearth');
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    const tx = db.transaction([...new Set(records.map((r) => r.store))], 'readwrite');
    for (const r of records) {
      const value = r.bytes === undefined ? r.value : { ...(r.value as object), bytes: new Uint8Array(r.bytes).fill(7).buffer };
      tx.objectStore(r.store).put(value);
    }
    await new Promise<void>((ok, fail) => {
      tx.oncomplete = () => ok();
      tx.onerror = () => fail(tx.error);
    });
    db.close();
  }, records);
}

/** The model ids the model-file cache ("hearth-model-files") holds files of, e.g. "files:<uuid>" or "bundled:hearth/tiny-chat". */
export async function modelFileKeys(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((ok, fail) => {
      const req = indexedDB.open('hearth-model-files');
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    const keys = await new Promise<IDBValidKey[]>((ok, fail) => {
      const req = db.transaction('files').objectStore('files').getAllKeys();
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    db.close();
    return [...new Set(keys.map((k) => String((k as string[])[0])))];
  });
}
