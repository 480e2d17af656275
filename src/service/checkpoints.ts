/**
 * Checkpoints of a model: listing pages, deleting chosen steps (their adapter files go with
 * them), registering a new trained adapter (for the trainer), and reading an adapter back (for
 * inference and export).
 *
 * Reference: specification endpoints 7 and 8; docs/reference/art-compat.md §1.3, §1.4, §5.
 */
import {
  deleteCheckpointSteps,
  getCheckpointByStep,
  insertCheckpoint,
  latestCheckpoint,
  listCheckpoints,
  readCheckpointFiles,
} from '../store/checkpoints';
import type { Page, PageRequest } from '../store/page';
import type { CheckpointRecord } from '../store/schema';
import { ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE, type AdapterFiles } from './adapters/peft-files';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { NotFoundError } from './errors';
import { newId } from './ids';
import { requireModel } from './models';

export async function listCheckpointPage(
  ctx: ServiceContext,
  caller: Principal,
  modelId: string,
  req: PageRequest,
): Promise<Page<CheckpointRecord>> {
  await requireModel(ctx, caller, modelId);
  return listCheckpoints(ctx.db, modelId, req);
}

export interface DeleteCheckpointsResult {
  deleted_count: number;
  not_found_steps: number[];
}

export async function deleteCheckpoints(
  ctx: ServiceContext,
  caller: Principal,
  modelId: string,
  steps: number[],
): Promise<DeleteCheckpointsResult> {
  await requireModel(ctx, caller, modelId);
  const unique = [...new Set(steps)];
  const result = await deleteCheckpointSteps(ctx.db, modelId, unique);
  return { deleted_count: result.deletedSteps.length, not_found_steps: result.notFoundSteps };
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}

/**
 * Stores a trained adapter as the model's next checkpoint (latest step + 1). Used by the trainer
 * before it reports `training_ended`, so ART's step lookup finds it.
 */
export async function addCheckpoint(
  ctx: ServiceContext,
  modelId: string,
  principalId: string,
  adapter: AdapterFiles,
  metrics: Record<string, number> = {},
): Promise<CheckpointRecord> {
  const latest = await latestCheckpoint(ctx.db, modelId);
  const checkpoint: CheckpointRecord = {
    id: newId(),
    modelId,
    principalId,
    step: (latest?.step ?? 0) + 1,
    metrics,
    files: [ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE],
    createdAt: ctx.now(),
  };
  await insertCheckpoint(ctx.db, checkpoint, [
    { checkpointId: checkpoint.id, name: ADAPTER_CONFIG_FILE, bytes: toArrayBuffer(adapter.adapterConfig) },
    { checkpointId: checkpoint.id, name: ADAPTER_MODEL_FILE, bytes: toArrayBuffer(adapter.adapterModel) },
  ]);
  return checkpoint;
}

/** A checkpoint's adapter files; null for step 0, the identity adapter (no LoRA weights). */
export async function readAdapter(ctx: ServiceContext, caller: Principal, modelId: string, step: number): Promise<AdapterFiles | null> {
  await requireModel(ctx, caller, modelId);
  const checkpoint = await getCheckpointByStep(ctx.db, modelId, step);
  if (!checkpoint) throw new NotFoundError(`Model ${modelId} has no checkpoint at step ${step}.`);
  if (checkpoint.files.length === 0) return null;
  const files = new Map((await readCheckpointFiles(ctx.db, checkpoint.id)).map((f) => [f.name, new Uint8Array(f.bytes)]));
  const adapterConfig = files.get(ADAPTER_CONFIG_FILE);
  const adapterModel = files.get(ADAPTER_MODEL_FILE);
  if (!adapterConfig || !adapterModel) throw new Error(`Checkpoint ${checkpoint.id} is missing adapter files.`);
  return { adapterConfig, adapterModel };
}
