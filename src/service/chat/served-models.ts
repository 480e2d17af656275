/**
 * The models chat completions can be served from: the inference engine (503 with the reason
 * when there is none), base models loaded through it, and the list GET /v1/models answers with
 * (every base model of the catalogue and every checkpoint of the caller's models, with
 * `max_model_len`).
 *
 * `max_model_len` is the engine's once the base model has been served (it also depends on the
 * GPU's memory for the KV cache), and before that the model's max_position_embeddings, read
 * from its config.json without loading it.
 *
 * Not here: resolving a request's model name (resolve-model.ts).
 * Reference: vLLM's `/v1/models` (ModelList of ModelCard: id, object, created, owned_by, root,
 * parent, max_model_len, permission).
 */
import type { InferenceEngine, ServedModel } from '../../engine/generate/types';
import { listCheckpoints } from '../../store/checkpoints';
import { listModels } from '../../store/models';
import type { CheckpointRecord } from '../../store/schema';
import type { Principal } from '../principal';
import type { BaseModelEntry } from '../base-models/catalog';
import type { ServiceContext } from '../context';
import { HearthError, UnavailableError } from '../errors';
import { checkpointName } from './model-names';

/** Base models the engine has handed out, per service context (one per engine boot). */
const served = new WeakMap<ServiceContext, Map<string, ServedModel>>();
const configLengths = new WeakMap<ServiceContext, Map<string, Promise<number | null>>>();

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function inferenceEngine(ctx: ServiceContext): Promise<InferenceEngine> {
  if (!ctx.inference) {
    throw new UnavailableError('Chat completions are not available yet in this build of Hearth: it has no inference engine.');
  }
  try {
    return await ctx.inference();
  } catch (err) {
    if (err instanceof HearthError) throw err;
    throw new UnavailableError(`Chat completions are not available: ${reason(err)}`);
  }
}

/** The base model on the GPU, loading it first when it is not resident. */
export async function serveModel(ctx: ServiceContext, engine: InferenceEngine, baseId: string): Promise<ServedModel> {
  let model: ServedModel;
  try {
    model = await engine.loadModel(baseId);
  } catch (err) {
    if (err instanceof HearthError) throw err;
    throw new UnavailableError(`The model ${baseId} could not be loaded: ${reason(err)}`);
  }
  let map = served.get(ctx);
  if (!map) served.set(ctx, (map = new Map()));
  map.set(baseId, model);
  return model;
}

async function configMaxLength(ctx: ServiceContext, entry: BaseModelEntry): Promise<number | null> {
  let map = configLengths.get(ctx);
  if (!map) configLengths.set(ctx, (map = new Map()));
  let pending = map.get(entry.id);
  if (!pending) {
    pending = (async () => {
      try {
        // Called unbound: a browser's fetch refuses to run with `this` set to another object.
        const fetchFn = ctx.fetch;
        const res = await fetchFn(new URL('config.json', entry.location.endsWith('/') ? entry.location : entry.location + '/').href);
        if (!res.ok) return null;
        const value = ((await res.json()) as { max_position_embeddings?: unknown }).max_position_embeddings;
        return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
      } catch {
        return null;
      }
    })();
    map.set(entry.id, pending);
  }
  const value = await pending;
  // A failed read is retried next time (the network or the cache may be back).
  if (value === null) map.delete(entry.id);
  return value;
}

export interface ModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  root: string;
  parent: string | null;
  max_model_len: number | null;
  permission: unknown[];
}

async function allCheckpoints(ctx: ServiceContext, modelId: string): Promise<CheckpointRecord[]> {
  const out: CheckpointRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await listCheckpoints(ctx.db, modelId, { after, limit: 100, order: 'asc' });
    out.push(...page.items);
    if (!page.hasMore || page.items.length === 0) return out;
    after = page.items[page.items.length - 1].id;
  }
}

/** GET /v1/models: base models first, then the caller's checkpoints model by model, step by step. */
export async function listServableModels(ctx: ServiceContext, caller: Principal, startedAt: number): Promise<ModelCard[]> {
  const bases = await ctx.catalog.list();
  const lengths = new Map<string, number | null>();
  for (const b of bases) lengths.set(b.id, served.get(ctx)?.get(b.id)?.maxModelLen ?? (await configMaxLength(ctx, b)));
  const seconds = (ms: number) => Math.floor(ms / 1000);
  const cards: ModelCard[] = bases.map((b) => ({
    id: b.id,
    object: 'model',
    created: seconds(startedAt),
    owned_by: 'hearth',
    root: b.id,
    parent: null,
    max_model_len: lengths.get(b.id) ?? null,
    permission: [],
  }));
  for (const model of await listModels(ctx.db, caller.id)) {
    if (!lengths.has(model.baseModel)) continue; // its base model left the catalogue: not servable
    for (const checkpoint of await allCheckpoints(ctx, model.id)) {
      cards.push({
        id: checkpointName(model, checkpoint.step),
        object: 'model',
        created: seconds(checkpoint.createdAt),
        owned_by: model.entity,
        root: checkpointName(model, null),
        parent: model.baseModel,
        max_model_len: lengths.get(model.baseModel) ?? null,
        permission: [],
      });
    }
  }
  return cards;
}
