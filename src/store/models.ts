/**
 * Repository of models. Registering writes the model, its step-0 checkpoint and its run record
 * in one transaction, so a model never exists without them.
 *
 * Not here: deleting a model and everything it owns (cascade.ts); checkpoints (checkpoints.ts).
 */
import type { CheckpointFileRecord, CheckpointRecord, HearthDb, ModelRecord, RunRecord } from './schema';
import { writeTx } from './tx';

export class DuplicateModelError extends Error {
  override name = 'DuplicateModelError';
}

export async function insertModel(
  db: HearthDb,
  model: ModelRecord,
  stepZero: CheckpointRecord,
  run: RunRecord,
  /** A model registered from an uploaded adapter: that adapter as its first trained checkpoint. */
  imported?: { checkpoint: CheckpointRecord; files: CheckpointFileRecord[] },
): Promise<void> {
  await writeTx(db, ['models', 'checkpoints', 'runs', 'checkpointFiles'], async (tx) => {
    const key: [string, string, string, string] = [model.principalId, model.entity, model.project, model.name];
    if (await tx.objectStore('models').index('by-name').getKey(key)) {
      throw new DuplicateModelError(`A model named ${model.entity}/${model.project}/${model.name} already exists.`);
    }
    await tx.objectStore('models').add(model);
    await tx.objectStore('checkpoints').add(stepZero);
    await tx.objectStore('runs').add(run);
    if (imported) {
      await tx.objectStore('checkpoints').add(imported.checkpoint);
      for (const file of imported.files) await tx.objectStore('checkpointFiles').add(file);
    }
  });
}

/** The model if it exists and belongs to `principalId`; otherwise undefined (never another's). */
export async function getModel(db: HearthDb, principalId: string, id: string): Promise<ModelRecord | undefined> {
  const model = await db.get('models', id);
  return model && model.principalId === principalId ? model : undefined;
}

export async function findModelByName(
  db: HearthDb,
  principalId: string,
  entity: string,
  project: string,
  name: string,
): Promise<ModelRecord | undefined> {
  return db.getFromIndex('models', 'by-name', [principalId, entity, project, name]);
}

/** A principal's models, oldest first (ties broken by id so the order is total). */
export async function listModels(db: HearthDb, principalId: string): Promise<ModelRecord[]> {
  const models = await db.getAllFromIndex('models', 'by-principal', principalId);
  return models.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}
