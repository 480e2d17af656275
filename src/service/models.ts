/**
 * Models: registration (ART's `models.create`, idempotent with `return_existing`), reading,
 * listing, and deletion with everything the model owns.
 *
 * Reference: docs/reference/art-compat.md §1.2, §1.5; specification endpoint 9.
 */
import { deleteModelCascade, type ModelDeletion } from '../store/cascade';
import { DuplicateModelError, findModelByName, getModel, insertModel, listModels } from '../store/models';
import { paginate, type Page, type PageRequest } from '../store/page';
import type { CheckpointRecord, LoraConfig, ModelRecord, RunRecord } from '../store/schema';
import type { Principal } from './principal';
import type { ServiceContext } from './context';
import { ConflictError, InvalidInputError, NotFoundError } from './errors';
import { newId, newRunId } from './ids';

/** LoRA defaults of ART's serverless models: r 8, alpha 16, every projection of every layer. */
export const DEFAULT_LORA: LoraConfig = {
  r: 8,
  alpha: 16,
  targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
};

/** The same defaults for a base model whose checkpoint fuses q|k|v and gate|up (Phi-3): PEFT's names there. */
export const FUSED_DEFAULT_LORA: LoraConfig = { ...DEFAULT_LORA, targetModules: ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'] };

/** The default LoRA for a base model of this architecture (catalog names: the engine's, or HF's class). */
export function defaultLoraFor(architecture: string | undefined): LoraConfig {
  return architecture === 'phi3' || architecture === 'Phi3ForCausalLM' ? FUSED_DEFAULT_LORA : DEFAULT_LORA;
}

export interface RegisterModel {
  entity?: string | null;
  project: string;
  name: string;
  base_model: string;
  return_existing?: boolean | null;
}

export async function registerModel(ctx: ServiceContext, caller: Principal, req: RegisterModel): Promise<ModelRecord> {
  const entity = req.entity ?? caller.entity;
  const existing = await findModelByName(ctx.db, caller.id, entity, req.project, req.name);
  if (existing) return returnExisting(existing, req);

  const known = await ctx.catalog.list();
  const base = known.find((m) => m.id === req.base_model);
  if (!base) {
    const available = known.map((m) => m.id).join(', ') || 'none (the model manifest could not be read)';
    throw new InvalidInputError(
      ['body', 'base_model'],
      `Unknown base model "${req.base_model}". Available base models: ${available}.`,
      req.base_model,
      'value_error',
      { available: known.map((m) => m.id) },
    );
  }

  const { model, stepZero, run } = newModelRecords(caller, entity, req, defaultLoraFor(base.architecture), ctx.now());
  try {
    await insertModel(ctx.db, model, stepZero, run);
  } catch (err) {
    if (!(err instanceof DuplicateModelError)) throw err;
    // A concurrent registration of the same name won.
    const winner = await findModelByName(ctx.db, caller.id, entity, req.project, req.name);
    if (!winner) throw err;
    return returnExisting(winner, req);
  }
  return model;
}

/**
 * The records a new model starts with: the model, its step 0 (the untrained identity adapter: ART
 * reads the latest step right after registering) and its run. Registration and adapter import
 * both write them.
 */
export function newModelRecords(
  caller: Principal,
  entity: string,
  req: Pick<RegisterModel, 'project' | 'name' | 'base_model'>,
  lora: LoraConfig,
  now: number,
): { model: ModelRecord; stepZero: CheckpointRecord; run: RunRecord } {
  const model: ModelRecord = {
    id: newId(),
    principalId: caller.id,
    entity,
    project: req.project,
    name: req.name,
    baseModel: req.base_model,
    runId: newRunId(),
    lora,
    createdAt: now,
  };
  const stepZero: CheckpointRecord = {
    id: newId(),
    modelId: model.id,
    principalId: caller.id,
    step: 0,
    metrics: {},
    files: [],
    createdAt: now,
  };
  const run: RunRecord = { id: model.runId, modelId: model.id, principalId: caller.id, createdAt: now };
  return { model, stepZero, run };
}

function returnExisting(existing: ModelRecord, req: RegisterModel): ModelRecord {
  const label = `${existing.entity}/${existing.project}/${existing.name}`;
  if (!req.return_existing) {
    throw new ConflictError(`A model named ${label} already exists (id ${existing.id}). Pass "return_existing": true to get it.`);
  }
  if (existing.baseModel !== req.base_model) {
    throw new ConflictError(`The model ${label} exists with base model "${existing.baseModel}", not "${req.base_model}".`);
  }
  return existing;
}

export async function requireModel(ctx: ServiceContext, caller: Principal, modelId: string): Promise<ModelRecord> {
  const model = await getModel(ctx.db, caller.id, modelId);
  if (!model) throw new NotFoundError(`Model ${modelId} not found.`);
  return model;
}

export async function listModelPage(ctx: ServiceContext, caller: Principal, req: PageRequest): Promise<Page<ModelRecord>> {
  return paginate(await listModels(ctx.db, caller.id), req, (m) => m.id);
}

/** Deletes the model and everything it owns; a job running for it is stopped first. */
export async function deleteModel(ctx: ServiceContext, caller: Principal, modelId: string): Promise<ModelDeletion> {
  const deletion = await deleteModelCascade(ctx.db, caller.id, modelId);
  if (!deletion) throw new NotFoundError(`Model ${modelId} not found.`);
  for (const jobId of deletion.deletedJobIds) ctx.jobs.cancel(jobId, `Model ${modelId} was deleted.`);
  return deletion;
}
