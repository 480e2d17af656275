/**
 * Repository of artifacts: data a model owns besides its checkpoints (an SFT job's resolved
 * training data, or SFT data uploaded through POST /v1/preview/artifacts). Resolved data is
 * written together with the job that needs it (training-jobs.ts `insertJob`), uploads on their
 * own (`insertArtifact`); both are deleted with their model (cascade.ts).
 */
import { requireModelInTx } from './errors';
import type { ArtifactRecord, HearthDb } from './schema';
import { writeTx } from './tx';

export async function getArtifact(db: HearthDb, principalId: string, id: string): Promise<ArtifactRecord | undefined> {
  const artifact = await db.get('artifacts', id);
  return artifact && artifact.principalId === principalId ? artifact : undefined;
}

/** Stores an uploaded artifact, if its model still exists (checked in the same transaction). */
export async function insertArtifact(db: HearthDb, artifact: ArtifactRecord): Promise<void> {
  await writeTx(db, ['models', 'artifacts'], async (tx) => {
    await requireModelInTx(tx.objectStore('models'), artifact.modelId, artifact.principalId);
    await tx.objectStore('artifacts').add(artifact);
  });
}
