/**
 * The base-model list of the Models view (GET /v1/preview/base-models): every bundled model and
 * every downloaded or uploaded one, with where it comes from, its status (available, downloading,
 * paused, cached, error), the bytes in the cache, the progress of a running download (live in
 * this engine, or from the cache's partial files after a reload), whether it is resident on
 * the GPU, and its weights' format (safetensors or GGUF with its quantization) and GPU bytes.
 *
 * Not here: starting or removing downloads (downloads.ts).
 */
import type { CachedModelInfo } from '../../engine/model/sources/file-cache';
import { redactCredentials, withoutCredentials } from '../../engine/model/sources/url-source';
import { listBaseModels } from '../../store/base-models';
import type { BaseModelRecord } from '../../store/schema';
import { bundledCacheKey, type LiveDownload } from './downloads';
import type { BaseModelEntry } from './catalog';
import type { ServiceContext } from '../context';
import { NotFoundError } from '../errors';

export type BaseModelStatus = 'available' | 'downloading' | 'paused' | 'cached' | 'error';

export interface BaseModelInfo {
  id: string;
  architecture: string | null;
  parameters: number | null;
  bytes: number | null;
  source: 'bundled' | 'huggingface' | 'url' | 'files';
  status: BaseModelStatus;
  cachedBytes: number;
  download: { loaded: number; total: number; bytesPerSecond: number; startedAt: number; error: string | null } | null;
  default: boolean;
  /** What a bundled model is for (the catalogue's description); null for added models, whose origin says enough. */
  description: string | null;
  loaded: boolean;
  maxModelLen: number | null;
  /** Where it came from, without credentials (issue 10, item 4). */
  origin: BaseModelOrigin;
  format: 'safetensors' | 'gguf';
  /**
   * The weights' quantization: a GGUF's (Q4_K_M, Q8_0, F16, once its header was read), or the blocks
   * a safetensors model is quantized to as it loads (Q8_0, Q4_K); null for safetensors as they are.
   */
  quantization: string | null;
  /**
   * GPU bytes: what the engine measures while the model is on the GPU (weights, KV cache, step
   * buffers, adapter pool), else its weights' bytes (they stay in their file precision or blocks,
   * docs/design.md); null until known.
   */
  gpuBytes: number | null;
  /** What loading it warned about (e.g. tokenizer tokens past the embedding rows, dropped; issue 21). */
  warnings: string[];
}

export type BaseModelOrigin =
  | { type: 'bundled' }
  | { type: 'huggingface'; repo: string; revision: string | null; mirror: string | null; file: string | null }
  | { type: 'url'; url: string }
  | { type: 'upload' };

function originOf(r: BaseModelRecord): BaseModelOrigin {
  if (r.source === 'huggingface')
    return {
      type: 'huggingface',
      repo: r.location,
      revision: r.revision,
      mirror: r.hfBase && withoutCredentials(r.hfBase),
      file: r.ggufFiles?.[0] ?? null,
    };
  if (r.source === 'url') return { type: 'url', url: r.id }; // the id is the URL without credentials
  return { type: 'upload' };
}

/**
 * Bytes so far and the total known so far: each file's announced size (or its bytes while the
 * server has not said). The total grows as the loader reaches files (the weights come last).
 */
function progressOf(files: readonly { loaded: number; total: number | null }[]): { loaded: number; total: number } {
  return { loaded: files.reduce((s, f) => s + f.loaded, 0), total: files.reduce((s, f) => s + Math.max(f.total ?? 0, f.loaded), 0) };
}

function cacheProgress(info: CachedModelInfo | undefined): { loaded: number; total: number } {
  return progressOf((info?.files ?? []).map((f) => ({ loaded: f.bytes, total: f.total })));
}

function liveProgress(live: LiveDownload): { loaded: number; total: number } {
  return progressOf([...live.files.values()]);
}

/** Nothing arrived for this long: the transfer stalled (a view's "time left" must not trust the old rate). */
const STALLED_MS = 3000;

function currentRate(live: LiveDownload): number {
  return Date.now() - live.lastProgressAt > STALLED_MS ? 0 : live.bytesPerSecond;
}

function bundledInfo(entry: BaseModelEntry, cached: CachedModelInfo | undefined, resident: Map<string, number>): BaseModelInfo {
  // Cached once every file the loader fetched is complete, weights included.
  const complete = !!cached && cached.files.every((f) => f.complete) && cached.files.some((f) => f.file.endsWith('.safetensors'));
  return {
    id: entry.id,
    architecture: entry.architecture,
    parameters: entry.parameters,
    bytes: entry.bytes,
    source: 'bundled',
    status: complete ? 'cached' : 'available',
    cachedBytes: cached?.bytes ?? 0,
    download: null,
    default: entry.default,
    description: entry.description || null,
    loaded: resident.has(entry.id),
    maxModelLen: resident.get(entry.id) ?? null,
    origin: { type: 'bundled' },
    format: 'safetensors',
    quantization: null,
    // The manifest counts every file (tokenizer included), not the weights alone.
    gpuBytes: null,
    warnings: [],
  };
}

function addedInfo(
  ctx: ServiceContext,
  r: BaseModelRecord,
  cached: CachedModelInfo | undefined,
  resident: Map<string, number>,
): BaseModelInfo {
  const live = ctx.baseModels?.progress(r.id);
  // A record left "downloading" with nothing running here is waiting for an engine to resume it.
  const status: BaseModelStatus = r.status === 'downloading' && !live ? 'paused' : r.status;
  // The loader's progress events are throttled, and the cache only grows chunk by chunk: the
  // larger of the two is the closest to what has arrived.
  const stored = cacheProgress(cached);
  const running = live ? liveProgress(live) : stored;
  const progress = { loaded: Math.max(running.loaded, stored.loaded), total: Math.max(running.total, stored.total) };
  return {
    id: r.id,
    architecture: r.architecture,
    parameters: r.parameters,
    bytes: r.bytes,
    source: r.source,
    status,
    cachedBytes: cached?.bytes ?? 0,
    download:
      r.status === 'cached'
        ? null
        : {
            loaded: progress.loaded,
            total: progress.total,
            bytesPerSecond: live ? currentRate(live) : 0,
            startedAt: r.startedAt,
            error: r.error && redactCredentials(r.error),
          },
    default: false,
    description: null,
    loaded: resident.has(r.id),
    maxModelLen: resident.get(r.id) ?? r.maxPositionEmbeddings,
    origin: originOf(r),
    format: r.format ?? 'safetensors',
    quantization: r.quantization ?? null,
    gpuBytes: r.gpuBytes ?? r.bytes,
    warnings: r.warnings ?? [],
  };
}

export async function listBaseModelInfo(ctx: ServiceContext): Promise<BaseModelInfo[]> {
  const [catalog, records, cached] = await Promise.all([
    ctx.catalog.list(),
    listBaseModels(ctx.db),
    ctx.modelFiles?.listModels() ?? Promise.resolve([] as CachedModelInfo[]),
  ]);
  const byKey = new Map(cached.map((m) => [m.modelId, m]));
  const residents = ctx.residentModels?.() ?? [];
  const resident = new Map(residents.map((m) => [m.id, m.maxModelLen]));
  const onGpu = new Map(residents.map((m) => [m.id, m.gpuBytes ?? null]));
  const bundled = catalog.filter((m) => m.source === 'bundled');
  return [
    ...bundled.map((m) => bundledInfo(m, byKey.get(bundledCacheKey(m.id)), resident)),
    ...records.filter((r) => !bundled.some((b) => b.id === r.id)).map((r) => addedInfo(ctx, r, byKey.get(r.cacheKey), resident)),
  ].map((m) => ({ ...m, gpuBytes: onGpu.get(m.id) ?? m.gpuBytes }));
}

export async function requireBaseModelInfo(ctx: ServiceContext, id: string): Promise<BaseModelInfo> {
  const found = (await listBaseModelInfo(ctx)).find((m) => m.id === id);
  if (!found) throw new NotFoundError(`Base model ${id} not found.`);
  return found;
}
