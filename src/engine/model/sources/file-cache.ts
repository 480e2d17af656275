/**
 * ModelFileCache: where downloaded model files are kept so a download resumes after an
 * interruption and a second load needs no network. A file is stored as consecutive chunks; it is
 * "complete" once the whole body arrived. The browser implementation is IndexedDB
 * (src/store/model-files.ts, database "hearth-model-files"); MemoryFileCache below keeps the same
 * contract in memory (Node scripts and tests, or a browser without storage).
 * A file the server answered 404 for is remembered as missing (as huggingface_hub's `.no_exist`
 * markers do), so a second load of a repository without, say, generation_config.json works offline.
 * Not here: HTTP and resuming logic (download.ts).
 */

/** What an interrupted download left behind. */
export interface PartialFile {
  /** Bytes stored so far (the next Range request starts here). */
  bytes: number;
  /** Validator of the response the bytes came from (strong ETag or Last-Modified), for If-Range. */
  validator: string | null;
  total: number | null;
}

export interface CachedFileInfo {
  file: string;
  bytes: number;
  total: number | null;
  complete: boolean;
}

export interface CachedModelInfo {
  modelId: string;
  files: CachedFileInfo[];
  /** Sum of stored bytes. */
  bytes: number;
  updatedAt: number;
}

/** Where appended bytes come from: the server's validator (ETag), the file's full size, the URL. */
export interface ChunkOrigin {
  validator: string | null;
  total: number | null;
  url: string;
}

export interface ModelFileCache {
  /** A complete file, or null. */
  get(modelId: string, file: string): Promise<Blob | null>;
  /** What a previous download of this file left, or null when nothing is stored. */
  partial(modelId: string, file: string): Promise<PartialFile | null>;
  /** Stores the next bytes; `offset` must equal the bytes already stored (else it throws). */
  append(modelId: string, file: string, offset: number, data: Uint8Array, meta: ChunkOrigin): Promise<void>;
  /** Whether the server said the repository has no such file. */
  isMissing(modelId: string, file: string): Promise<boolean>;
  /** Remembers that the repository has no such file (replacing anything stored under the name). */
  markMissing(modelId: string, file: string): Promise<void>;
  /** Marks the file complete and returns it. */
  complete(modelId: string, file: string): Promise<Blob>;
  /** Forgets one file, complete or not (the server's copy changed). */
  discard(modelId: string, file: string): Promise<void>;
  /** Forgets every file of a model. */
  removeModel(modelId: string): Promise<void>;
  listModels(): Promise<CachedModelInfo[]>;
}

interface MemoryEntry {
  chunks: Uint8Array[];
  bytes: number;
  total: number | null;
  validator: string | null;
  complete: boolean;
  missing: boolean;
  updatedAt: number;
}

/** MemoryFileCache ran out of its byte budget (the in-memory counterpart of a storage quota). */
export class CacheFullError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CacheFullError';
  }
}

export class MemoryFileCache implements ModelFileCache {
  private readonly models = new Map<string, Map<string, MemoryEntry>>();
  private stored = 0;

  /** `maxBytes`: refuse to hold more than this many bytes in total (default: no limit). */
  constructor(private readonly maxBytes = Infinity) {}

  private entry(modelId: string, file: string): MemoryEntry | undefined {
    return this.models.get(modelId)?.get(file);
  }

  async get(modelId: string, file: string): Promise<Blob | null> {
    const e = this.entry(modelId, file);
    return e?.complete ? new Blob(e.chunks as BlobPart[]) : null;
  }

  async partial(modelId: string, file: string): Promise<PartialFile | null> {
    const e = this.entry(modelId, file);
    return e && !e.missing ? { bytes: e.bytes, validator: e.validator, total: e.total } : null;
  }

  async isMissing(modelId: string, file: string): Promise<boolean> {
    return this.entry(modelId, file)?.missing ?? false;
  }

  async markMissing(modelId: string, file: string): Promise<void> {
    await this.discard(modelId, file);
    let files = this.models.get(modelId);
    if (!files) this.models.set(modelId, (files = new Map()));
    files.set(file, { chunks: [], bytes: 0, total: null, validator: null, complete: false, missing: true, updatedAt: Date.now() });
  }

  async append(modelId: string, file: string, offset: number, data: Uint8Array, meta: ChunkOrigin): Promise<void> {
    let files = this.models.get(modelId);
    if (!files) this.models.set(modelId, (files = new Map()));
    let e = files.get(file);
    if (!e || e.missing)
      files.set(file, (e = { chunks: [], bytes: 0, total: null, validator: null, complete: false, missing: false, updatedAt: 0 }));
    if (e.complete) throw new Error(`${modelId}/${file}: already complete`);
    if (offset !== e.bytes) throw new Error(`${modelId}/${file}: append at ${offset} but ${e.bytes} bytes are stored`);
    if (this.stored + data.byteLength > this.maxBytes) {
      throw new CacheFullError(`Not enough room to cache ${modelId}/${file}: the cache holds at most ${this.maxBytes} bytes`);
    }
    e.chunks.push(data.slice());
    e.bytes += data.byteLength;
    this.stored += data.byteLength;
    e.total = meta.total;
    e.validator = meta.validator;
    e.updatedAt = Date.now();
  }

  async complete(modelId: string, file: string): Promise<Blob> {
    const e = this.entry(modelId, file);
    if (!e) throw new Error(`${modelId}/${file}: nothing stored`);
    e.complete = true;
    e.total = e.bytes;
    return new Blob(e.chunks as BlobPart[]);
  }

  async discard(modelId: string, file: string): Promise<void> {
    this.stored -= this.entry(modelId, file)?.bytes ?? 0;
    this.models.get(modelId)?.delete(file);
  }

  async removeModel(modelId: string): Promise<void> {
    for (const e of this.models.get(modelId)?.values() ?? []) this.stored -= e.bytes;
    this.models.delete(modelId);
  }

  async listModels(): Promise<CachedModelInfo[]> {
    const out: CachedModelInfo[] = [];
    for (const [modelId, all] of this.models) {
      const files = [...all].filter(([, e]) => !e.missing);
      if (files.length === 0) continue;
      out.push({
        modelId,
        files: files.map(([file, e]) => ({ file, bytes: e.bytes, total: e.total, complete: e.complete })),
        bytes: files.reduce((s, [, e]) => s + e.bytes, 0),
        updatedAt: Math.max(...files.map(([, e]) => e.updatedAt)),
      });
    }
    return out;
  }
}
