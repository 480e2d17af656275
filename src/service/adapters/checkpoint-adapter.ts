/**
 * A checkpoint as the engine's LoraAdapter, for serving it: its adapter_config.json is read now
 * (parse.ts), so a bad adapter fails the request before generation, and a `load()` reads the
 * checkpoint's files from IndexedDB (through the checkpoints service) and parses
 * adapter_model.safetensors only when the engine does not hold the adapter. Step 0 (the
 * identity adapter, no files) serves the base model unchanged.
 *
 * Not here: parsing the files (parse.ts), choosing the checkpoint (chat/resolve-model.ts).
 */
import type { LoraAdapter } from '../../engine/generate/types';
import type { CheckpointRecord, ModelRecord } from '../../store/schema';
import { readAdapter } from '../checkpoints';
import type { ServiceContext } from '../context';
import type { Principal } from '../principal';
import { AdapterError, parseAdapterConfig, parseAdapterModel } from './parse';
import { ADAPTER_CONFIG_FILE } from './peft-files';

/**
 * The engine's adapter for one checkpoint, or null for the identity adapter (step 0 / no files).
 * The config is read now, so a bad adapter fails the request before generation; the weights
 * are read again by `load()` only when the engine does not hold the adapter.
 */
export async function checkpointAdapter(
  ctx: ServiceContext,
  caller: Principal,
  model: ModelRecord,
  checkpoint: CheckpointRecord,
): Promise<LoraAdapter | null> {
  if (checkpoint.files.length === 0) return null;
  const files = await readAdapter(ctx, caller, model.id, checkpoint.step);
  if (!files) return null;
  const where = `checkpoint step ${checkpoint.step} of ${model.entity}/${model.project}/${model.name}: ${ADAPTER_CONFIG_FILE}`;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(files.adapterConfig));
  } catch (e) {
    throw new AdapterError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  const config = parseAdapterConfig(json, where);
  return {
    key: `checkpoint:${checkpoint.id}`,
    config,
    async load() {
      const again = await readAdapter(ctx, caller, model.id, checkpoint.step);
      if (!again)
        throw new AdapterError(
          `checkpoint step ${checkpoint.step} of ${model.entity}/${model.project}/${model.name} no longer has adapter files`,
        );
      return parseAdapterModel(again.adapterModel);
    },
  };
}
