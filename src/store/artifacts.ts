/**
 * Repository of artifacts: data a model owns besides its checkpoints (an SFT job's resolved
 * training data). Artifacts are written together with the job that needs them
 * (training-jobs.ts `insertJob`) and deleted with their model (cascade.ts).
 */
import type { ArtifactRecord, HearthDb } from './schema';

export async function getArtifact(db: HearthDb, principalId: string, id: string): Promise<ArtifactRecord | undefined> {
  const artifact = await db.get('artifacts', id);
  return artifact && artifact.principalId === principalId ? artifact : undefined;
}

export async function listArtifacts(db: HearthDb, modelId: string): Promise<ArtifactRecord[]> {
  return db.getAllFromIndex('artifacts', 'by-model', modelId);
}
