/**
 * CachedSource: a repository read back from the model-file cache alone, with no network: a model
 * downloaded (or uploaded) earlier through /v1/preview/base-models. Only complete files are
 * listed, so the loader asks for nothing the download did not finish; a file that is not there
 * reads as absent, which the loader reports by name.
 * Not here: downloading (url-source.ts, download.ts).
 */
import type { ModelFileCache } from './file-cache';
import type { ModelSource } from './source';

export class CachedSource implements ModelSource {
  readonly label: string;

  constructor(
    /** The files' key in the cache. */
    readonly id: string,
    private readonly cache: ModelFileCache,
    label?: string,
  ) {
    this.label = label ?? `the cached copy of ${id}`;
  }

  async list(): Promise<string[]> {
    const model = (await this.cache.listModels()).find((m) => m.modelId === this.id);
    return (model?.files ?? [])
      .filter((f) => f.complete)
      .map((f) => f.file)
      .sort();
  }

  async open(file: string): Promise<Blob | null> {
    return this.cache.get(this.id, file);
  }
}
