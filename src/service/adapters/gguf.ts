/**
 * A checkpoint as a GGUF LoRA adapter (issue 11): the checkpoint's PEFT files (archive.ts)
 * written as the file llama.cpp loads with `--lora` over a GGUF of the same base model, so an adapter
 * trained in Hearth runs in llama.cpp, LM Studio or Ollama. The conversion is the engine's
 * (engine/model/gguf/gguf-lora.ts); this reads the checkpoint and its base model's config.
 *
 * Not here: HTTP (api/routes/adapters.ts), the PEFT zip.
 */
import { GgufLoraError, ggufLoraAdapter } from '../../engine/model/gguf/gguf-lora';
import type { Principal } from '../principal';
import { parseAdapterModel } from './parse';
import type { ServiceContext } from '../context';
import { InvalidInputError } from '../errors';
import { baseModelConfig, checkpointAdapterFiles, type AdapterZip } from './archive';
import { engineLoraConfig } from './peft-files';

/** A checkpoint's adapter as a .gguf file; 404 for an unknown model or step, 422 for an architecture llama.cpp's adapters miss. */
export async function checkpointAdapterGguf(ctx: ServiceContext, caller: Principal, modelId: string, step: number): Promise<AdapterZip> {
  const { model, files } = await checkpointAdapterFiles(ctx, caller, modelId, step);
  const config = await baseModelConfig(ctx, model.baseModel);
  const lora = engineLoraConfig(model.lora);
  const tensors = await parseAdapterModel(files.adapterModel);
  try {
    const bytes = ggufLoraAdapter(config, { ...lora, name: `${model.name}-step${step}` }, tensors);
    return { fileName: `${model.name}-step${step}-adapter.gguf`, bytes };
  } catch (err) {
    if (err instanceof GgufLoraError)
      throw new InvalidInputError(['query', 'format'], `This checkpoint cannot be a GGUF adapter: ${err.message}.`, 'gguf');
    throw err;
  }
}
