/**
 * Resolving a chat request's `model` to what the engine serves: a base model of the catalogue,
 * or a registered model's checkpoint (a LoRA adapter over its base model). An omitted or empty
 * name means the default base model; a registered model without a step means its latest
 * checkpoint. Only the caller's own models resolve (another principal's look unknown).
 * An unknown name is vLLM's 404 "The model `X` does not exist.".
 *
 * Not here: the name forms (model-names.ts), reading the adapter (adapters/checkpoint-adapter.ts).
 * Reference: docs/reference/art-compat.md §5; docs/reference/vllm-chat.md §1.1 (404 text), §2 (`model` row).
 */
import { getCheckpointByStep, latestCheckpoint } from '../../store/checkpoints';
import { findModelByName, getModel, listModels } from '../../store/models';
import type { CheckpointRecord, ModelRecord } from '../../store/schema';
import type { Principal } from '../principal';
import type { BaseModelEntry } from '../base-models/catalog';
import type { ServiceContext } from '../context';
import { NotFoundError, UnavailableError } from '../errors';
import { ChatRequestError } from './errors';
import { parseModelName } from './model-names';

export interface ResolvedModel {
  /** The base model the engine loads. */
  base: BaseModelEntry;
  /** What the response's `model` says: the base id, or the checkpoint name as requested. */
  servedName: string;
  /** The checkpoint applied over the base model, or null for the base model itself. */
  checkpoint: { model: ModelRecord; record: CheckpointRecord } | null;
}

function unknown(name: string, why = ''): NotFoundError {
  return new NotFoundError(`The model \`${name}\` does not exist.${why ? ` ${why}` : ''}`);
}

/** The catalogue's default base model (its `default` entry, else the first). */
export async function defaultBaseModel(ctx: ServiceContext): Promise<BaseModelEntry> {
  const all = await ctx.catalog.list();
  const entry = all.find((m) => m.default) ?? all[0];
  if (!entry) throw new UnavailableError('No base model is available: the model manifest could not be read.');
  return entry;
}

async function findRegistered(ctx: ServiceContext, caller: Principal, name: string, parts: string[]): Promise<ModelRecord | undefined> {
  if (parts.length === 3) return findModelByName(ctx.db, caller.id, parts[0], parts[1], parts[2]);
  if (parts.length !== 1) return undefined;
  const byId = await getModel(ctx.db, caller.id, parts[0]);
  if (byId) return byId;
  const named = (await listModels(ctx.db, caller.id)).filter((m) => m.name === parts[0]);
  if (named.length > 1) {
    const full = named.map((m) => `${m.entity}/${m.project}/${m.name}`).join(', ');
    throw new ChatRequestError(`The model name \`${name}\` is ambiguous: it matches ${full}. Use entity/project/name.`, 'model');
  }
  return named[0];
}

export async function resolveModel(ctx: ServiceContext, caller: Principal, requested: string | undefined): Promise<ResolvedModel> {
  if (requested === undefined || requested === '') {
    const base = await defaultBaseModel(ctx);
    return { base, servedName: base.id, checkpoint: null };
  }
  const base = await ctx.catalog.get(requested);
  if (base) return { base, servedName: base.id, checkpoint: null };

  const parsed = parseModelName(requested);
  if (!parsed) throw unknown(requested);
  const model = await findRegistered(ctx, caller, requested, parsed.parts);
  if (!model) throw unknown(requested);

  const record = parsed.step === null ? await latestCheckpoint(ctx.db, model.id) : await getCheckpointByStep(ctx.db, model.id, parsed.step);
  if (!record) {
    const what = parsed.step === null ? 'no checkpoints' : `no checkpoint at step ${parsed.step}`;
    throw unknown(requested, `The model ${model.entity}/${model.project}/${model.name} has ${what}.`);
  }
  const modelBase = await ctx.catalog.get(model.baseModel);
  if (!modelBase) throw unknown(requested, `Its base model ${model.baseModel} is not available.`);
  return { base: modelBase, servedName: requested.trim(), checkpoint: { model, record } };
}
