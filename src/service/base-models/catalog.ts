/**
 * The catalogue of base models Hearth knows: the bundled ones listed in the static manifest
 * `models/index.json` (written by `npm run make-models`), and the models downloaded or uploaded
 * through /v1/preview/base-models once their files are complete in the cache (`cachedModels`).
 *
 * Not here: loading weights or tokenizers (src/engine/model). This only answers "which base
 * models exist, and where are their files".
 */
import { z } from 'zod';
import type { QuantizeTarget } from '../../engine/tensor/dtype';
import { listBaseModels } from '../../store/base-models';
import type { HearthDb } from '../../store/schema';

const ManifestEntry = z.looseObject({
  id: z.string().min(1),
  path: z.string().min(1),
  architecture: z.string(),
  parameters: z.number(),
  bytes: z.number(),
  default: z.boolean().optional(),
  description: z.string().optional(),
});
const Manifest = z.looseObject({ models: z.array(ManifestEntry) });

export interface BaseModelEntry {
  id: string;
  /** Where the model's files are: a URL for bundled models. */
  location: string;
  architecture: string;
  parameters: number;
  bytes: number;
  default: boolean;
  description: string;
  source: 'bundled' | 'cached';
  /** Downloaded or uploaded models: their files' key in the model-file cache (read from there only). */
  cacheKey?: string;
  /** A GGUF model's file, or the ordered parts of a split one; absent for safetensors repositories. */
  ggufFiles?: readonly string[];
  /** A safetensors model loaded as Q8_0 or Q4_K blocks (chosen when it was added). */
  quantizeOnLoad?: QuantizeTarget;
}

/** One place base models come from. `list` may fail (network, storage); the catalogue retries. */
export interface BaseModelSource {
  readonly name: string;
  list(): Promise<BaseModelEntry[]>;
}

/** The bundled models of the app: the manifest at `manifestUrl`, paths relative to it. */
export function bundledModels(manifestUrl: string, fetchFn: typeof fetch = fetch): BaseModelSource {
  return {
    name: 'bundled',
    async list() {
      const res = await fetchFn(manifestUrl);
      if (!res.ok) throw new Error(`Cannot read the model manifest ${manifestUrl}: HTTP ${res.status}.`);
      const manifest = Manifest.parse(await res.json());
      // Paths are relative to the app's base URL, which is the folder above models/index.json.
      const base = new URL('..', manifestUrl);
      return manifest.models.map((m) => ({
        id: m.id,
        location: new URL(m.path, base).href,
        architecture: m.architecture,
        parameters: m.parameters,
        bytes: m.bytes,
        default: m.default ?? false,
        description: m.description ?? '',
        source: 'bundled' as const,
      }));
    },
  };
}

/** Models added through /v1/preview/base-models whose download (or upload) is complete. */
export function cachedModels(db: HearthDb): BaseModelSource {
  return {
    name: 'cached',
    async list() {
      return (await listBaseModels(db))
        .filter((r) => r.status === 'cached')
        .map((r) => ({
          id: r.id,
          location: r.location,
          architecture: r.architecture ?? '',
          parameters: r.parameters ?? 0,
          bytes: r.bytes ?? 0,
          default: false,
          description: r.source === 'files' ? 'Uploaded from picked files.' : `Downloaded from ${r.location}.`,
          source: 'cached' as const,
          cacheKey: r.cacheKey,
          ...(r.format === 'gguf' && r.ggufFiles ? { ggufFiles: r.ggufFiles } : {}),
          ...(r.quantizeOnLoad ? { quantizeOnLoad: r.quantizeOnLoad } : {}),
        }));
    },
  };
}

export class BaseModelCatalog {
  private cached: Map<string, BaseModelEntry> | undefined;

  constructor(private readonly sources: BaseModelSource[]) {}

  /** All known base models. A source that fails is skipped this time and asked again next time. */
  async list(): Promise<BaseModelEntry[]> {
    if (this.cached) return [...this.cached.values()];
    const entries = new Map<string, BaseModelEntry>();
    let complete = true;
    for (const source of this.sources) {
      try {
        for (const entry of await source.list()) if (!entries.has(entry.id)) entries.set(entry.id, entry);
      } catch (err) {
        complete = false;
        console.warn(`[hearth] base model source "${source.name}" failed:`, err);
      }
    }
    if (complete) this.cached = entries;
    return [...entries.values()];
  }

  async get(id: string): Promise<BaseModelEntry | undefined> {
    return (await this.list()).find((m) => m.id === id);
  }

  /** Forget what was listed, e.g. after a model was downloaded into the cache. */
  invalidate(): void {
    this.cached = undefined;
  }
}
