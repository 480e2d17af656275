/**
 * BundledSource: one of the app's own models under public/models/ (listed in
 * public/models/index.json, see catalog.ts). In the browser and its workers the files are fetched
 * relative to the app's base URL (through downloadFile, so progress events and an optional cache
 * work as for any download); in Node, with no base URL, they are read from the repository's
 * public/ folder on disk. The catalogue's file list spares requests for files a model lacks.
 * Cached files are keyed "bundled:<id>" so a bundled model never shares cache entries with a
 * Hugging Face repository of the same name. With a cache, a cached file is revalidated against the app's server before use (the bundled
 * files change when the app is updated, e.g. trained weights); offline, the cached copy is used.
 * Caching is best-effort: with the storage full, the files load from the server without it.
 */
import { DirectorySource } from './directory-source';
import { downloadFile } from './download';
import type { ModelFileCache } from './file-cache';
import type { FileRequest, ModelSource } from './source';

export interface BundledSourceOptions {
  /** Cache key and display id, e.g. "hearth/tiny-chat" (default: the path). */
  id?: string;
  /** The model's files, from the catalogue; when given, other names are known to be absent. */
  files?: readonly string[];
  /** URL the path is relative to (default: the page's or worker's location). */
  baseUrl?: string;
  cache?: ModelFileCache | null;
  fetch?: typeof fetch;
}

/** public/ of this repository, for Node: src/engine/model/sources/ is four levels below. */
function publicDir(): URL {
  const relative = '../../../../public/'; // a variable: Vite must not treat this as a browser asset
  return new URL(relative, import.meta.url);
}

export class BundledSource implements ModelSource {
  readonly id: string;
  readonly label: string;
  private readonly baseUrl: string | null;
  private readonly disk: DirectorySource | null;

  /** `path` as in the catalogue, relative to the app's base: "models/tiny-chat/". */
  constructor(
    readonly path: string,
    private readonly options: BundledSourceOptions = {},
  ) {
    const dir = path.endsWith('/') ? path : path + '/';
    this.id = options.id ?? dir;
    const base = options.baseUrl ?? (globalThis as { location?: { href: string } }).location?.href;
    if (base) {
      this.baseUrl = new URL(dir, base).href;
      this.disk = null;
      this.label = `bundled model ${this.baseUrl}`;
    } else {
      this.baseUrl = null;
      this.disk = new DirectorySource(new URL(dir, publicDir()), this.id);
      this.label = `bundled model public/${dir}`;
    }
  }

  async list(): Promise<string[] | null> {
    if (this.options.files) return [...this.options.files];
    return this.disk ? this.disk.list() : null;
  }

  async open(file: string, request: FileRequest = {}): Promise<Blob | null> {
    if (this.options.files && !this.options.files.includes(file)) return null;
    if (this.disk) {
      const blob = await this.disk.open(file);
      if (blob) request.onProgress?.({ file, loaded: blob.size, total: blob.size, bytesPerSecond: 0, fromCache: true });
      return blob;
    }
    return downloadFile({
      url: this.baseUrl + file,
      file,
      modelId: `bundled:${this.id}`,
      cache: this.options.cache ?? null,
      fetch: this.options.fetch,
      revalidate: true,
      // The app's server always has the file again: a full storage skips the cache, never the model.
      cacheOptional: true,
      ...request,
    });
  }
}
