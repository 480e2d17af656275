/**
 * A base model's repository and the format of its weights: a Hugging Face layout (config.json,
 * tokenizer.json, safetensors) or GGUF files (one file, or the ordered parts of a split one, with
 * the config and tokenizer in their metadata). `loadRepository` reads either into the same
 * LoadedModelFiles, so the engine serves and trains both the same way.
 *
 * A safetensors model may be loaded quantized (`quantize`: Q8_0 or Q4_K blocks, quant/quantize-on-load.ts).
 *
 * Not here: reading each format (repo.ts, gguf/gguf-repo.ts), where files come from (sources/).
 */
import { loadGgufModelFiles } from '../gguf/gguf-repo';
import type { QuantizeTarget } from '../../tensor/dtype';
import { quantizeOnLoad } from '../quant/quantize-on-load';
import { loadModelFiles, type LoadedModelFiles, type LoadOptions } from './repo';
import type { ModelSource } from '../sources/source';

export type ModelFormat = { type: 'safetensors'; quantize?: QuantizeTarget } | { type: 'gguf'; files: readonly string[] };

export interface ModelRepository {
  source: ModelSource;
  format: ModelFormat;
}

export const SAFETENSORS: ModelFormat = { type: 'safetensors' };

/** A bare ModelSource is a Hugging Face layout (every source before GGUF, and the bundled models). */
export function asRepository(repo: ModelSource | ModelRepository): ModelRepository {
  return 'format' in repo ? repo : { source: repo, format: SAFETENSORS };
}

export async function loadRepository(repo: ModelRepository, options: LoadOptions = {}): Promise<LoadedModelFiles> {
  if (repo.format.type === 'gguf') return loadGgufModelFiles(repo.source, [...repo.format.files], options);
  const files = await loadModelFiles(repo.source, options);
  return repo.format.quantize ? quantizeOnLoad(files, repo.format.quantize) : files;
}
