/**
 * A base model's repository and the format of its weights: a Hugging Face layout (config.json,
 * tokenizer.json, safetensors) or GGUF files (one file, or the ordered parts of a split one, with
 * the config and tokenizer in their metadata). `loadRepository` reads either into the same
 * LoadedModelFiles, so the engine serves and trains both the same way.
 *
 * Not here: reading each format (repo.ts, gguf/gguf-repo.ts), where files come from (sources/).
 */
import { loadGgufModelFiles } from './gguf/gguf-repo';
import { loadModelFiles, type LoadedModelFiles, type LoadOptions } from './repo';
import type { ModelSource } from './sources/source';

export type ModelFormat = { type: 'safetensors' } | { type: 'gguf'; files: readonly string[] };

export interface ModelRepository {
  source: ModelSource;
  format: ModelFormat;
}

export const SAFETENSORS: ModelFormat = { type: 'safetensors' };

/** A bare ModelSource is a Hugging Face layout (every source before GGUF, and the bundled models). */
export function asRepository(repo: ModelSource | ModelRepository): ModelRepository {
  return 'format' in repo ? repo : { source: repo, format: SAFETENSORS };
}

export function loadRepository(repo: ModelRepository, options: LoadOptions = {}): Promise<LoadedModelFiles> {
  return repo.format.type === 'gguf'
    ? loadGgufModelFiles(repo.source, [...repo.format.files], options)
    : loadModelFiles(repo.source, options);
}
