/**
 * Repository of base models added through /v1/preview/base-models (downloads and uploads): their
 * origin, status and what was learnt of them. Small records, one per model, so reads are whole.
 *
 * Not here: the files themselves (model-files.ts), bundled models (models/index.json).
 */
import type { BaseModelRecord, HearthDb } from './schema';

export async function getBaseModel(db: HearthDb, id: string): Promise<BaseModelRecord | undefined> {
  return db.get('baseModels', id);
}

/** Oldest first. */
export async function listBaseModels(db: HearthDb): Promise<BaseModelRecord[]> {
  return (await db.getAll('baseModels')).sort((a, b) => a.startedAt - b.startedAt);
}

export async function putBaseModel(db: HearthDb, record: BaseModelRecord): Promise<void> {
  await db.put('baseModels', record);
}

/** Applies `change` to the record if it still exists (a deletion meanwhile wins); returns the result. */
export async function updateBaseModel(
  db: HearthDb,
  id: string,
  change: Partial<Omit<BaseModelRecord, 'id'>>,
): Promise<BaseModelRecord | undefined> {
  const tx = db.transaction('baseModels', 'readwrite');
  const record = await tx.store.get(id);
  if (!record) {
    await tx.done;
    return undefined;
  }
  const updated = { ...record, ...change };
  await Promise.all([tx.store.put(updated), tx.done]);
  return updated;
}

export async function deleteBaseModel(db: HearthDb, id: string): Promise<void> {
  await db.delete('baseModels', id);
}
