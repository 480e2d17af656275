/**
 * Base models beyond the bundled ones (POST/DELETE /v1/preview/base-models): downloads from a
 * Hugging Face repository (or a mirror with the same URL layout) or a URL, and uploads of picked
 * files, into the model-file cache; and removing cached weights.
 *
 * A download runs in the engine that accepted it, in the background: the model loader
 * (loadRepository over a UrlSource with the cache) fetches every file in chunks, validates the
 * config, tokenizer and safetensors headers, and only then does the model join the catalogue
 * (status "cached"). Its record in the database says it is downloading, so after a reload the
 * next engine calls `resumeAll()` and the cache's partial files make it continue from the last
 * stored chunk. A network failure (after the downloader's own retries) or a full storage quota
 * pauses it ("paused": POSTing the same source again resumes, from the stored chunks); a
 * repository that is wrong (missing files, unsupported architecture, refused access) ends in
 * "error" with the loader's message. An upload that does not fit the quota is a 507 that keeps
 * none of its files.
 *
 * A GGUF file (a repository's file, a URL ending in .gguf, or picked .gguf files) takes the same
 * path; its header is checked before the download starts (gguf.ts). Downloads from the
 * hub or the configured mirror carry the Hugging Face token of the settings (hub-settings.ts).
 * A safetensors model may be added quantized (`quantization`: Q8_0 or Q4_K blocks made as it loads,
 * engine/model/quant/quantize-on-load.ts); the record keeps the choice, so every load uses it.
 *
 * Not here: validating an upload (uploaded-model.ts), the HTTP shapes (src/api/routes/base-models.ts),
 * downloading itself (src/engine/model/sources).
 */
import { cpuGgufCacheKey, cpuGgufModelId } from '../../engine/cpu/cpu-models';
import { loadRepository } from '../../engine/model/files/model-repository';
import type { ModelFileCache } from '../../engine/model/sources/file-cache';
import { SourceError, type DownloadProgress } from '../../engine/model/sources/source';
import { isHfRepoId, UrlSource } from '../../engine/model/sources/url-source';
import { deleteBaseModel, getBaseModel, listBaseModels, putBaseModel, updateBaseModel } from '../../store/base-models';
import { ModelFilesQuotaError } from '../../store/model-files';
import type { BaseModelRecord, HearthDb } from '../../store/schema';
import { jobsWithStatus } from '../../store/training-jobs';
import { ggufFactsOf, hubGgufTarget, urlGgufTarget, checkGgufHeader, type GgufTarget } from './gguf';
import { checkDownloadQuantization, formatOf, quantizedOnLoad, type LoadQuantization } from './quantization';
import { recordSummary } from './record-summary';
import type { UploadPart } from './upload';
import { addUploadedModel } from './uploaded-model';
import type { BaseModelCatalog } from './catalog';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors';
import { defaultHubMirror, hubCredentials } from '../hub-settings';

export type DownloadRequest =
  | { type: 'huggingface'; repo: string; revision?: string | null; base_url?: string | null; file?: string | null }
  | { type: 'url'; url: string };

/** Progress of a download running in this engine (bytes per file as the loader reports them). */
export interface LiveDownload {
  files: Map<string, { loaded: number; total: number | null }>;
  bytesPerSecond: number;
  /** When bytes last arrived (the loader's clock, Date.now()). */
  lastProgressAt: number;
  abort: AbortController;
  done: Promise<void>;
}

export interface BaseModelDeps {
  db: HearthDb;
  catalog: BaseModelCatalog;
  /** Where the files go; null where nothing can be kept (downloads are then refused). */
  cache: ModelFileCache | null;
  fetch: typeof fetch;
  now(): number;
  /** The job queue, for jobs that ended while storage was full (still PENDING or RUNNING in the store). */
  jobs?: { unsavedEnd(jobId: string): unknown };
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class BaseModelDownloads {
  private readonly live = new Map<string, LiveDownload>();
  private resuming: Promise<void> = Promise.resolve();

  constructor(private readonly deps: BaseModelDeps) {}

  /** The download of `id` running in this engine, if any. */
  progress(id: string): LiveDownload | undefined {
    return this.live.get(id);
  }

  /**
   * At engine start: removes cached files no record owns (an engine that died between the two
   * writes of an upload or a removal left them), then resumes every download a previous engine
   * left running (after a reload or a host change).
   */
  resumeAll(): Promise<void> {
    this.resuming = (async () => {
      const records = await listBaseModels(this.deps.db);
      await this.sweepOrphanedFiles(records);
      for (const record of records) {
        if (record.status !== 'downloading' || this.live.has(record.id)) continue;
        if (record.parsing) await this.markBroken(record);
        else this.run(record);
      }
    })();
    return this.resuming;
  }

  /**
   * A download whose previous engine died while parsing its files (a file that crashes the
   * engine, issue 26): ends in "error" once, saying so, instead of being resumed (and crashing
   * the engine again) at every start. Its stored files stay until the model is removed.
   */
  private async markBroken(record: BaseModelRecord): Promise<void> {
    const error = `The engine stopped while parsing ${record.parsing} of ${record.id}, so it was not loaded again: the files may be hostile or too large to parse. Remove the model and add it again to retry.`;
    console.warn(`[hearth] ${error}`);
    await updateBaseModel(this.deps.db, record.id, { status: 'error', error, parsing: null, updatedAt: this.deps.now() });
  }

  /**
   * The two databases (records in "hearth", bytes in the model-file cache) are written in an
   * order that a crash can only leave bytes without a record, never a record without its bytes
   * (issue 10, item 11): an upload stores its files before its record, a removal deletes the
   * record before the files. This sweep deletes such bytes. Bundled models' files are keyed
   * "bundled:<id>" and belong to the catalogue, not to a record. The CPU backend's GGUF copy of a
   * model ("<id>#cpu-gguf") lives as long as the model is in the catalogue.
   */
  private async sweepOrphanedFiles(records: BaseModelRecord[]): Promise<void> {
    const cache = this.deps.cache;
    if (!cache) return;
    const owned = new Set(records.map((r) => r.cacheKey));
    const known = new Set([...records.map((r) => r.id), ...(await this.deps.catalog.list().catch(() => [])).map((m) => m.id)]);
    for (const m of await cache.listModels()) {
      const cpuCopyOf = cpuGgufModelId(m.modelId);
      const orphan = cpuCopyOf !== null ? !known.has(cpuCopyOf) : !owned.has(m.modelId) && !m.modelId.startsWith(BUNDLED_PREFIX);
      if (orphan) await cache.removeModel(m.modelId);
    }
  }

  /** Resolves once no download runs in this engine (tests, shutdown), resumed ones included. */
  async idle(): Promise<void> {
    await this.resuming.catch(() => undefined);
    while (this.live.size > 0) await Promise.all([...this.live.values()].map((d) => d.done));
  }

  /** Stops every running download (the engine is closing); their records stay "downloading". */
  stopAll(): void {
    for (const d of this.live.values()) d.abort.abort(new Error('The engine stopped.'));
  }

  /**
   * Starts (or resumes) a download. Returns the record and whether anything had to start: a
   * model already cached, or downloading here, is returned as it is. `quantization` applies to
   * safetensors models only (422 for a GGUF); asking for another one than a known model's is a 409.
   */
  async start(req: DownloadRequest, quantization?: LoadQuantization): Promise<{ record: BaseModelRecord; started: boolean }> {
    const { id, location, revision, hfBase, source, gguf } = await this.describe(req);
    const cache = this.deps.cache;
    if (!cache) throw new ConflictError('This engine has no storage for model files, so it cannot download models.');
    if (await this.isBundled(id)) throw new ConflictError(`${id} is a bundled model: it needs no download.`);
    const existing = await getBaseModel(this.deps.db, id);
    checkDownloadQuantization(quantization, id, !!gguf, existing);
    if (existing && (existing.status === 'cached' || this.live.has(id))) return { record: existing, started: false };
    // A repository that failed may have been fixed: forget what it answered (404s are remembered).
    if (existing?.status === 'error') await cache.removeModel(existing.cacheKey);
    // A new GGUF (or one that failed) is checked before anything is kept; a paused one was checked.
    const loc = ['body', 'source', req.type === 'huggingface' ? 'file' : 'url'];
    const facts =
      gguf && (!existing || existing.status === 'error') ? await checkGgufHeader(source, gguf, cache, loc, this.deps.fetch) : null;
    const now = this.deps.now();
    // A GGUF's `quantization` is its file type (checkDownloadQuantization let only null through).
    const quantized = quantization !== undefined && !gguf ? quantizedOnLoad(quantization) : {};
    const record: BaseModelRecord = existing
      ? { ...existing, ...quantized, status: 'downloading', error: null, revision, hfBase, updatedAt: now }
      : {
          id,
          source: req.type,
          location,
          revision,
          hfBase,
          cacheKey: source.id,
          status: 'downloading',
          error: null,
          architecture: facts?.architecture ?? null,
          parameters: null,
          bytes: null,
          maxPositionEmbeddings: facts?.maxPositionEmbeddings ?? null,
          ...(gguf ? { format: 'gguf' as const, ggufFiles: gguf.files, quantization: facts?.quantization ?? null } : quantized),
          startedAt: now,
          updatedAt: now,
        };
    await putBaseModel(this.deps.db, record);
    this.run(record);
    return { record, started: true };
  }

  /** The id, cache key and source of a request; 422 when the repo id, file or URL cannot be one. */
  private async describe(req: DownloadRequest) {
    if (req.type === 'huggingface') {
      if (!isHfRepoId(req.repo)) {
        throw new InvalidInputError(
          ['body', 'source', 'repo'],
          `"${req.repo}" is not a Hugging Face repo id: expected "org/name".`,
          req.repo,
        );
      }
      const revision = req.revision ?? null;
      const gguf: GgufTarget | null = req.file ? hubGgufTarget(req.repo, req.file, revision) : null;
      // No mirror named: the one this download used before (a resume), else the settings' one.
      const known = await getBaseModel(this.deps.db, gguf?.id ?? (revision && revision !== 'main' ? `${req.repo}@${revision}` : req.repo));
      const hfBase = req.base_url ?? known?.hfBase ?? (await defaultHubMirror(this.deps.db));
      const source = await this.source({ source: 'huggingface', location: req.repo, revision, hfBase, cacheKey: gguf?.id });
      return { id: source.id, location: req.repo, revision, hfBase, source, gguf };
    }
    // The id (shown to every key) leaves credentials out; the location, fetched, keeps them.
    const gguf = urlGgufTarget(req.url);
    const source = await this.source({
      source: 'url',
      location: gguf?.location ?? req.url,
      revision: null,
      hfBase: null,
      cacheKey: gguf?.id,
    });
    return { id: source.id, location: source.baseUrl, revision: null, hfBase: null, source, gguf };
  }

  /** The record's files over HTTP, with the Hugging Face token where it may go (hub-auth.ts). */
  private async source(
    r: Pick<BaseModelRecord, 'source' | 'location' | 'revision' | 'hfBase'> & { cacheKey?: string },
  ): Promise<UrlSource> {
    return new UrlSource(r.location, {
      id: r.cacheKey,
      cache: this.deps.cache,
      fetch: this.deps.fetch,
      hfBase: r.hfBase ?? undefined,
      revision: r.revision ?? undefined,
      credentials: await hubCredentials(this.deps.db),
    });
  }

  private run(record: BaseModelRecord): void {
    const abort = new AbortController();
    const download: LiveDownload = { files: new Map(), bytesPerSecond: 0, lastProgressAt: 0, abort, done: Promise.resolve() };
    const onProgress = (p: DownloadProgress) => {
      download.files.set(p.file, { loaded: p.loaded, total: p.total });
      if (!p.fromCache) {
        download.bytesPerSecond = p.bytesPerSecond;
        download.lastProgressAt = Date.now();
      }
    };
    this.live.set(record.id, download);
    download.done = (async () => {
      try {
        const source = await this.source(record);
        const format = formatOf(record);
        // Marked while its files are parsed: a file that kills the engine is not parsed again at the next start.
        const parsing = async (files: string | null) => void (await updateBaseModel(this.deps.db, record.id, { parsing: files }));
        const files = await loadRepository({ source, format }, { signal: abort.signal, onProgress, parsing });
        const quantization = format.type === 'gguf' ? { quantization: (await ggufFactsOf(source, format.files)).quantization } : {};
        await updateBaseModel(this.deps.db, record.id, {
          ...recordSummary(files),
          ...quantization,
          status: 'cached',
          error: null,
          parsing: null,
          updatedAt: this.deps.now(),
        });
        this.deps.catalog.invalidate();
      } catch (err) {
        if (abort.signal.aborted) return; // deleted, or the engine stopped: the record says what is next
        // Unreachable servers and a full storage quota pause (resumable, the stored chunks kept:
        // issue 10, item 9); a wrong or refused repository is an error.
        const paused = err instanceof ModelFilesQuotaError || (err instanceof SourceError && err.status !== 401 && err.status !== 403);
        await updateBaseModel(this.deps.db, record.id, {
          status: paused ? 'paused' : 'error',
          error: message(err),
          parsing: null,
          updatedAt: this.deps.now(),
        }).catch((stored: unknown) => console.error(`[hearth] could not record the end of the download of ${record.id}:`, stored));
      } finally {
        this.live.delete(record.id);
      }
    })();
  }

  /**
   * Stores an uploaded model (the upload of the Models view) as its body streams in, then has the
   * loader validate it like a download (uploaded-model.ts).
   */
  async addFiles(parts: AsyncIterable<UploadPart>): Promise<BaseModelRecord> {
    const cache = this.deps.cache;
    if (!cache) throw new ConflictError('This engine has no storage for model files, so it cannot keep uploaded models.');
    // The start-up sweep would take this upload's files, written before its record, for orphans.
    await this.resuming.catch(() => undefined);
    const record = await addUploadedModel(
      {
        db: this.deps.db,
        cache,
        now: () => this.deps.now(),
        isBundled: (id) => this.isBundled(id),
      },
      parts,
    );
    this.deps.catalog.invalidate();
    return record;
  }

  /**
   * Removes a model's cached files: a downloaded or uploaded model leaves the catalogue, a bundled
   * one stays listed (it can be fetched again). 409 while a queued or running job trains on it.
   */
  async remove(id: string): Promise<{ freedBytes: number }> {
    const record = await getBaseModel(this.deps.db, id);
    const bundled = await this.isBundled(id);
    if (!record && !bundled) throw new NotFoundError(`Base model ${id} not found.`);
    const busy = [...(await jobsWithStatus(this.deps.db, 'RUNNING')), ...(await jobsWithStatus(this.deps.db, 'PENDING'))];
    for (const job of busy.filter((j) => !this.deps.jobs?.unsavedEnd(j.id))) {
      const model = await this.deps.db.get('models', job.modelId);
      if (model?.baseModel === id) {
        throw new ConflictError(
          `Training job ${job.id} (${job.status}) trains on ${id}: wait for it to end before removing the model's weights.`,
        );
      }
    }
    const key = record ? record.cacheKey : bundledCacheKey(id);
    const live = this.live.get(id);
    if (live) {
      live.abort.abort(new Error(`${id} was removed.`));
      await live.done.catch(() => undefined);
    }
    const cache = this.deps.cache;
    const freedBytes = cache ? ((await cache.listModels()).find((m) => m.modelId === key)?.bytes ?? 0) : 0;
    // Record first, then files: a crash between leaves bytes that the next start sweeps away,
    // never a "cached" record whose files are gone.
    if (record) await deleteBaseModel(this.deps.db, id);
    this.deps.catalog.invalidate();
    await cache?.removeModel(key);
    await cache?.removeModel(cpuGgufCacheKey(id));
    return { freedBytes };
  }

  private async isBundled(id: string): Promise<boolean> {
    return (await this.deps.catalog.list()).some((m) => m.id === id && m.source === 'bundled');
  }
}

const BUNDLED_PREFIX = 'bundled:';

/** Bundled models are cached under this key (BundledSource), apart from same-named downloads. */
export function bundledCacheKey(id: string): string {
  return `${BUNDLED_PREFIX}${id}`;
}
