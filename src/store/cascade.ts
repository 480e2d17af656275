/**
 * Deleting a model and everything it owns, in one transaction: its checkpoints and their adapter
 * files, artifacts, trajectory logs, run record, and training jobs with their inputs, events and
 * saved progress; and deleting a principal with its keys and every model it owns, the same way.
 * Nothing is left orphaned, and nothing of another model or principal is read for writing.
 *
 * Not here: stopping a job that is running for the model (the job runner is told by the
 * service; its next write then finds the job gone).
 */
import type { HearthDb, ModelRecord } from './schema';
import { writeTx, type WriteTx } from './tx';

export interface ModelDeletion {
  deletedCheckpoints: number;
  deletedRun: boolean;
  deletedJobIds: string[];
  deletedArtifacts: number;
  deletedLogs: number;
}

const MAX = Number.MAX_SAFE_INTEGER;

// One store list for both cascades, so that they share deleteModelIn (the principal's adds two stores).
const CASCADE_STORES = [
  'models',
  'checkpoints',
  'checkpointFiles',
  'runs',
  'runHistory',
  'trajectoryLogs',
  'trajectoryGroups',
  'trainingJobs',
  'jobInputs',
  'jobEvents',
  'artifacts',
  'jobProgress',
  'principals',
  'apiKeys',
] as const;
type CascadeStores = (typeof CASCADE_STORES)[number];

/** Returns undefined when the model does not exist or is not `principalId`'s. */
export async function deleteModelCascade(db: HearthDb, principalId: string, modelId: string): Promise<ModelDeletion | undefined> {
  return writeTx(db, [...CASCADE_STORES], async (tx) => {
    const model = await tx.objectStore('models').get(modelId);
    if (!model || model.principalId !== principalId) return undefined;
    return deleteModelIn(tx, model);
  });
}

export interface PrincipalDeletion {
  models: ModelDeletion[];
  deletedKeys: number;
}

/**
 * Deletes a principal, its keys, and every model it owns with everything those own, in one
 * transaction (issue 10, item 8). Undefined when there is no such principal.
 */
export async function deletePrincipalCascade(db: HearthDb, principalId: string): Promise<PrincipalDeletion | undefined> {
  return writeTx(db, [...CASCADE_STORES], async (tx) => {
    if (!(await tx.objectStore('principals').get(principalId))) return undefined;
    const models = await tx.objectStore('models').index('by-principal').getAll(principalId);
    const deletions: ModelDeletion[] = [];
    for (const model of models) deletions.push(await deleteModelIn(tx, model));
    const keyIds = await tx.objectStore('apiKeys').index('by-principal').getAllKeys(principalId);
    for (const id of keyIds) await tx.objectStore('apiKeys').delete(id);
    await tx.objectStore('principals').delete(principalId);
    return { models: deletions, deletedKeys: keyIds.length };
  });
}

async function deleteModelIn(tx: WriteTx<CascadeStores[]>, model: ModelRecord): Promise<ModelDeletion> {
  const modelId = model.id;
  const checkpointIds = await tx
    .objectStore('checkpoints')
    .index('by-model-step')
    .getAllKeys(IDBKeyRange.bound([modelId, -1], [modelId, MAX]));
  for (const id of checkpointIds) {
    await tx.objectStore('checkpoints').delete(id);
    await tx.objectStore('checkpointFiles').delete(IDBKeyRange.bound([id, ''], [id, '\uffff']));
  }

  const run = await tx.objectStore('runs').get(model.runId);
  if (run) await tx.objectStore('runs').delete(run.id);
  await tx.objectStore('runHistory').delete(IDBKeyRange.bound([model.runId, 0], [model.runId, MAX]));

  const logIds = await tx.objectStore('trajectoryLogs').index('by-model').getAllKeys(modelId);
  for (const id of logIds) await tx.objectStore('trajectoryLogs').delete(id);
  const groupIds = await tx
    .objectStore('trajectoryGroups')
    .index('by-model-seq')
    .getAllKeys(IDBKeyRange.bound([modelId, 0], [modelId, MAX]));
  for (const id of groupIds) await tx.objectStore('trajectoryGroups').delete(id);

  const artifactIds = await tx.objectStore('artifacts').index('by-model').getAllKeys(modelId);
  for (const id of artifactIds) await tx.objectStore('artifacts').delete(id);

  const jobIds = await tx.objectStore('trainingJobs').index('by-model').getAllKeys(modelId);
  for (const id of jobIds) {
    await tx.objectStore('trainingJobs').delete(id);
    await tx.objectStore('jobInputs').delete(id);
    const eventIds = await tx
      .objectStore('jobEvents')
      .index('by-job-seq')
      .getAllKeys(IDBKeyRange.bound([id, 0], [id, MAX]));
    for (const eventId of eventIds) await tx.objectStore('jobEvents').delete(eventId);
  }

  // A running job's saved progress (issue 6) goes with the model.
  for (const id of await tx.objectStore('jobProgress').index('by-model').getAllKeys(modelId))
    await tx.objectStore('jobProgress').delete(id);

  await tx.objectStore('models').delete(modelId);
  return {
    deletedCheckpoints: checkpointIds.length,
    deletedRun: run !== undefined,
    deletedJobIds: jobIds,
    deletedArtifacts: artifactIds.length,
    deletedLogs: logIds.length,
  };
}
