/**
 * Repository of checkpoints and their adapter files. A checkpoint is a LoRA adapter in PEFT's
 * layout (adapter_config.json + adapter_model.safetensors); step 0 is the identity adapter and
 * has no files. Deleting a checkpoint deletes its files in the same transaction.
 *
 * Not here: what a checkpoint's metrics mean (service), deleting a whole model (cascade.ts).
 */
import { requireModelInTx } from './errors';
import type { CheckpointFileRecord, CheckpointRecord, HearthDb } from './schema';
import { pageFromOverfetch, UnknownCursorError, type Page, type PageRequest } from './page';
import { writeTx } from './tx';

const MAX_STEP = Number.MAX_SAFE_INTEGER;

/** Checkpoints of one model ordered by step; `after` is a checkpoint id of this model. */
export async function listCheckpoints(db: HearthDb, modelId: string, req: PageRequest): Promise<Page<CheckpointRecord>> {
  const tx = db.transaction('checkpoints');
  const index = tx.store.index('by-model-step');
  let lower: [string, number] = [modelId, -1];
  let upper: [string, number] = [modelId, MAX_STEP];
  let lowerOpen = false;
  let upperOpen = false;
  if (req.after !== undefined) {
    const cursorItem = await tx.store.get(req.after);
    if (!cursorItem || cursorItem.modelId !== modelId) throw new UnknownCursorError(req.after);
    if (req.order === 'asc') [lower, lowerOpen] = [[modelId, cursorItem.step], true];
    else [upper, upperOpen] = [[modelId, cursorItem.step], true];
  }
  const range = IDBKeyRange.bound(lower, upper, lowerOpen, upperOpen);
  const rows: CheckpointRecord[] = [];
  let cursor = await index.openCursor(range, req.order === 'asc' ? 'next' : 'prev');
  while (cursor && rows.length <= req.limit) {
    rows.push(cursor.value);
    cursor = await cursor.continue();
  }
  await tx.done;
  return pageFromOverfetch(rows, req.limit);
}

/** The highest-step checkpoint of a model, if it has any. */
export async function latestCheckpoint(db: HearthDb, modelId: string): Promise<CheckpointRecord | undefined> {
  const range = IDBKeyRange.bound([modelId, -1], [modelId, MAX_STEP]);
  const cursor = await db.transaction('checkpoints').store.index('by-model-step').openCursor(range, 'prev');
  return cursor?.value;
}

export async function getCheckpointByStep(db: HearthDb, modelId: string, step: number): Promise<CheckpointRecord | undefined> {
  return db.getFromIndex('checkpoints', 'by-model-step', [modelId, step]);
}

export class DuplicateStepError extends Error {
  override name = 'DuplicateStepError';
}

/** Stores a new checkpoint and its files together. */
export async function insertCheckpoint(db: HearthDb, checkpoint: CheckpointRecord, files: CheckpointFileRecord[]): Promise<void> {
  await writeTx(db, ['models', 'checkpoints', 'checkpointFiles'], async (tx) => {
    await requireModelInTx(tx.objectStore('models'), checkpoint.modelId);
    const taken = await tx.objectStore('checkpoints').index('by-model-step').getKey([checkpoint.modelId, checkpoint.step]);
    if (taken) throw new DuplicateStepError(`Model ${checkpoint.modelId} already has a checkpoint at step ${checkpoint.step}.`);
    await tx.objectStore('checkpoints').add(checkpoint);
    for (const file of files) await tx.objectStore('checkpointFiles').add(file);
  });
}

export async function readCheckpointFiles(db: HearthDb, checkpointId: string): Promise<CheckpointFileRecord[]> {
  return db.getAll('checkpointFiles', IDBKeyRange.bound([checkpointId, ''], [checkpointId, '\uffff']));
}

export interface DeleteStepsResult {
  deletedSteps: number[];
  notFoundSteps: number[];
}

/** Deletes the given steps of one model and their files in one transaction. */
export async function deleteCheckpointSteps(db: HearthDb, modelId: string, steps: number[]): Promise<DeleteStepsResult> {
  return writeTx(db, ['checkpoints', 'checkpointFiles'], async (tx) => {
    const index = tx.objectStore('checkpoints').index('by-model-step');
    const result: DeleteStepsResult = { deletedSteps: [], notFoundSteps: [] };
    for (const step of steps) {
      const checkpoint = await index.get([modelId, step]);
      if (!checkpoint) {
        result.notFoundSteps.push(step);
        continue;
      }
      await tx.objectStore('checkpoints').delete(checkpoint.id);
      await tx.objectStore('checkpointFiles').delete(IDBKeyRange.bound([checkpoint.id, ''], [checkpoint.id, '\uffff']));
      result.deletedSteps.push(step);
    }
    return result;
  });
}
