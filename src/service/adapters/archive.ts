/**
 * PEFT adapters in and out of Hearth:
 * - download: a checkpoint as a zip of `adapter_config.json` + `adapter_model.safetensors`
 *   (stored uncompressed), so `unzip` and `PeftModel.from_pretrained(base, dir)` use it as is.
 *   Step 0, the identity adapter, is written out too: zero A and B, exactly the base model.
 * - import: a new model registered from an uploaded adapter (the two files, or a zip of them,
 *   read by upload.ts within its limits):
 *   its LoRA settings come from adapter_config.json, every tensor is checked against the base
 *   model's shapes, and the adapter becomes the model's checkpoint at step 1 (step 0 stays the
 *   identity adapter), written in the same transaction as the model.
 *
 * Not here: HTTP (api/routes/adapters.ts), serving adapters (checkpoint-adapter.ts).
 */
import { zipSync } from 'fflate';
import type { LoraConfig } from '../../engine/model/lora/lora-config';
import type { ModelConfig } from '../../engine/model/config/model-config';
import { ggufModelConfig } from '../../engine/model/gguf/gguf-model';
import { readGguf } from '../../engine/model/gguf/gguf-reader';
import { orderGgufParts } from '../../engine/model/gguf/gguf-split';
import { parseModelConfig } from '../../engine/model/config/hf-config';
import { smallFileText } from '../../engine/model/files/repo';
import { blobBytes } from '../../engine/model/files/safetensors';
import { CachedSource } from '../../engine/model/sources/cached-source';
import { checkLoraTensors, loraParameterCount, loraToTensors, planLora } from '../../engine/train/lora-plan';
import { loraModulesOf } from '../../engine/model/lora/peft-modules';
import { DuplicateModelError, findModelByName, insertModel } from '../../store/models';
import type { CheckpointRecord, ModelRecord } from '../../store/schema';
import type { Principal } from '../principal';
import { AdapterError, parseAdapterConfig, parseAdapterModel } from './parse';
import { readAdapter } from '../checkpoints';
import type { ServiceContext } from '../context';
import { ConflictError, InvalidInputError, UnavailableError } from '../errors';
import { newId } from '../ids';
import { newModelRecords, requireModel } from '../models';
import { ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE, adapterFiles, engineLoraConfig, type AdapterFiles } from './peft-files';
import { adapterFromUpload } from './upload';

/**
 * The base model's config: a bundled model's config.json from its folder; a downloaded or uploaded
 * one's from the model-file cache (config.json, or a GGUF's metadata and the tensor tables of all
 * its parts: only headers are read).
 */
export async function baseModelConfig(ctx: ServiceContext, baseModel: string): Promise<ModelConfig> {
  const entry = await ctx.catalog.get(baseModel);
  if (!entry) throw new UnavailableError(`The base model ${baseModel} is no longer in the catalogue.`);
  if (entry.cacheKey !== undefined && ctx.modelFiles) {
    const source = new CachedSource(entry.cacheKey, ctx.modelFiles, entry.location);
    const open = async (file: string) => {
      const blob = await source.open(file);
      if (!blob) throw new UnavailableError(`The base model ${baseModel} has no ${file} in the model cache.`);
      return blob;
    };
    if (!entry.ggufFiles) return parseModelConfig(JSON.parse(await smallFileText(await open('config.json'), 'config.json')));
    const parts = orderGgufParts(entry.ggufFiles);
    const headers = await Promise.all(parts.map(async (file) => readGguf(blobBytes(await open(file)), file)));
    return ggufModelConfig({ ...headers[0], tensors: headers.flatMap((h) => h.tensors) }, parts[0]);
  }
  const fetchFn = ctx.fetch;
  const url = new URL('config.json', entry.location.endsWith('/') ? entry.location : entry.location + '/').href;
  const res = await fetchFn(url);
  if (!res.ok) throw new UnavailableError(`The config of base model ${baseModel} could not be read (HTTP ${res.status}).`);
  return parseModelConfig(await res.json());
}

export interface AdapterZip {
  fileName: string;
  bytes: Uint8Array;
}

/** A checkpoint's model and PEFT files (step 0 without files: the identity adapter); 404 for an unknown model or step. */
export async function checkpointAdapterFiles(
  ctx: ServiceContext,
  caller: Principal,
  modelId: string,
  step: number,
): Promise<{ model: ModelRecord; files: AdapterFiles }> {
  const model = await requireModel(ctx, caller, modelId);
  let files = await readAdapter(ctx, caller, modelId, step);
  if (!files) {
    const lora = engineLoraConfig(model.lora);
    const plan = planLora(await baseModelConfig(ctx, model.baseModel), lora);
    files = adapterFiles(model.baseModel, lora, loraToTensors(plan, new Float32Array(loraParameterCount(plan))));
  }
  return { model, files };
}

/** A checkpoint's PEFT files as a zip; 404 for an unknown model or step. */
export async function checkpointAdapterZip(ctx: ServiceContext, caller: Principal, modelId: string, step: number): Promise<AdapterZip> {
  const { model, files } = await checkpointAdapterFiles(ctx, caller, modelId, step);
  const bytes = zipSync({
    [ADAPTER_CONFIG_FILE]: [files.adapterConfig, { level: 0 }],
    [ADAPTER_MODEL_FILE]: [files.adapterModel, { level: 0 }],
  });
  return { fileName: `${model.name}-step${step}-adapter.zip`, bytes };
}

export interface ImportAdapter {
  entity?: string | null;
  project: string;
  name: string;
  base_model: string;
  files: { name: string; bytes: Uint8Array }[];
}

const FILES_LOC = ['body', 'files'];

/**
 * An uploaded adapter's LoRA config, once its files are checked against the base model's config:
 * every planned tensor present with the base model's shapes, nothing else. Throws AdapterError,
 * SafetensorsError, the SyntaxError of JSON.parse or the plan's Error, each naming what is wrong.
 */
export async function checkAdapterFiles(config: ModelConfig, files: AdapterFiles): Promise<LoraConfig> {
  const lora = parseAdapterConfig(JSON.parse(new TextDecoder().decode(files.adapterConfig)), undefined, loraModulesOf(config));
  const tensors = await parseAdapterModel(files.adapterModel);
  checkLoraTensors(planLora(config, lora), config, tensors);
  return lora;
}

export async function importAdapterModel(ctx: ServiceContext, caller: Principal, req: ImportAdapter): Promise<ModelRecord> {
  const files = adapterFromUpload(req.files);
  const known = await ctx.catalog.list();
  if (!known.some((m) => m.id === req.base_model)) {
    throw new InvalidInputError(
      ['body', 'base_model'],
      `Unknown base model "${req.base_model}". Available base models: ${known.map((m) => m.id).join(', ')}.`,
      req.base_model,
    );
  }
  const entity = req.entity ?? caller.entity;
  if (await findModelByName(ctx.db, caller.id, entity, req.project, req.name)) {
    throw new ConflictError(`A model named ${entity}/${req.project}/${req.name} already exists; import under another name.`);
  }
  let lora;
  try {
    lora = await checkAdapterFiles(await baseModelConfig(ctx, req.base_model), files);
  } catch (err) {
    if (err instanceof UnavailableError) throw err;
    const message = err instanceof AdapterError || err instanceof SyntaxError ? err.message : (err as Error).message;
    throw new InvalidInputError(FILES_LOC, `The adapter does not fit ${req.base_model}: ${message}`, null);
  }

  const now = ctx.now();
  const loraConfig = { r: lora.rank, alpha: lora.alpha, targetModules: lora.targetModules, ...(lora.useRslora ? { useRslora: true } : {}) };
  const { model, stepZero, run } = newModelRecords(caller, entity, req, loraConfig, now);
  const stepOne: CheckpointRecord = {
    id: newId(),
    modelId: model.id,
    principalId: caller.id,
    step: 1,
    metrics: {},
    files: [ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE],
    createdAt: now,
  };
  try {
    await insertModel(ctx.db, model, stepZero, run, {
      checkpoint: stepOne,
      files: [
        { checkpointId: stepOne.id, name: ADAPTER_CONFIG_FILE, bytes: files.adapterConfig.slice().buffer },
        { checkpointId: stepOne.id, name: ADAPTER_MODEL_FILE, bytes: files.adapterModel.slice().buffer },
      ],
    });
  } catch (err) {
    if (err instanceof DuplicateModelError) throw new ConflictError(err.message);
    throw err;
  }
  return model;
}
