/**
 * Repository of base models added through /v1/preview/base-models (downloads and uploads): their
 * origin, status and what was learnt of them. Small records, one per model, so reads are whole.
 *
 * Not here: the files themselves (model-files.ts), bundled models (models/index.json).
 */
import type { BaseModelRecord, HearthDb } from './schema';
import { writeTx } from './tx';

export async function getBaseModel(db: HearthDb, id: string): Promise<BaseModelRecord | undefined> {
  return db.get('baseModels', id);
}

/** Oldest first. */
export async function listBaseModels(db: HearthDb): Promise<BaseModelRecord[]> {
  return (await db.getAll('baseModels')).sort((a, b) => a.startedAt - b.startedAt);
}

/** Writes go through writeTx so that a full quota is a StorageQuotaError (507), not a raw DOMException. */
export async function putBaseModel(db: HearthDb, record: BaseModelRecord): Promise<void> {
  await writeTx(db, ['baseModels'], async (tx) => {
    await tx.objectStore('baseModels').put(record);
  });
}

/** Applies `change` to the record if it still exists (a deletion meanwhile wins); returns the result. */
export async function updateBaseModel(
  db: HearthDb,
  id: string,
  change: Partial<Omit<BaseModelRecord, 'id'>>,
): Promise<BaseModelRecord | undefined> {
  return writeTx(db, ['baseModels'], async (tx) => {
    const record = await tx.objectStore('baseModels').get(id);
    if (!record) return undefined;
    const updated = { ...record, ...change };
    await tx.objectStore('baseModels').put(updated);
    return updated;
  });
}

export async function deleteBaseModel(db: HearthDb, id: string): Promise<void> {
  await db.delete('baseModels', id);
}
