/**
 * Where the Engine reads a catalogue model from, given what the platform's base-model catalogue
 * says about it (passed in as plain data: the engine never imports the service). Bundled models are
 * fetched from the app's origin with the file list of models/index.json, other locations (a Hugging
 * Face repo id or a URL) through UrlSource; with a file cache (IndexedDB in the app) every file is
 * kept and revalidated, so a model loads offline once it has been loaded.
 *
 * Not here: reading and validating the repository (model/files/repo.ts), the catalogue itself.
 */
import { bundledSource, fetchCatalog, type CatalogEntry } from '../model/sources/catalog';
import { CachedSource } from '../model/sources/cached-source';
import type { ModelFileCache } from '../model/sources/file-cache';
import type { ModelRepository } from '../model/files/model-repository';
import type { QuantizeTarget } from '../tensor/dtype';
import type { ModelSource } from '../model/sources/source';
import { UrlSource } from '../model/sources/url-source';

/** What the catalogue knows of a base model (BaseModelEntry's fields the engine needs). */
export interface CatalogModel {
  id: string;
  /** A URL of the model's folder (bundled), a Hugging Face repo id or a URL (downloaded). */
  location: string;
  source: 'bundled' | 'cached';
  /**
   * A model downloaded or uploaded through /v1/preview/base-models: its files' key in the file
   * cache. Such a model is read from the cache alone (CachedSource), never from the network again.
   */
  cacheKey?: string;
  /** A GGUF model: its file, or the ordered parts of a split one (absent: a safetensors repository). */
  ggufFiles?: readonly string[];
  /** A safetensors model loaded as Q8_0 or Q4_K blocks (model/quant/quantize-on-load.ts). */
  quantizeOnLoad?: QuantizeTarget;
}

export interface CatalogSourceOptions {
  /** The app's base URL (bundled models and models/index.json are relative to it). */
  baseUrl: string;
  lookup(id: string): Promise<CatalogModel | undefined>;
  cache: ModelFileCache | null;
  fetch?: typeof fetch;
}

/** The Engine's `source` for a catalogue. Unknown ids reject with a message naming them. */
export function catalogSources(opts: CatalogSourceOptions): (id: string) => Promise<ModelSource | ModelRepository> {
  let bundled: Promise<CatalogEntry[]> | null = null;
  return async (id) => {
    const model = await opts.lookup(id);
    if (!model) throw new Error(`The model ${id} is not in the catalogue.`);
    if (model.source === 'bundled') {
      bundled ??= fetchCatalog(opts.baseUrl, opts.fetch).catch((e: unknown) => {
        bundled = null;
        throw e;
      });
      const entry = (await bundled).find((e) => e.id === id);
      if (entry) return bundledSource(entry, { baseUrl: opts.baseUrl, cache: opts.cache, fetch: opts.fetch });
    }
    const source =
      model.cacheKey !== undefined && opts.cache
        ? new CachedSource(model.cacheKey, opts.cache, model.location)
        : new UrlSource(model.location, { cache: opts.cache, fetch: opts.fetch });
    if (model.ggufFiles) return { source, format: { type: 'gguf', files: model.ggufFiles } };
    return model.quantizeOnLoad ? { source, format: { type: 'safetensors', quantize: model.quantizeOnLoad } } : source;
  };
}
