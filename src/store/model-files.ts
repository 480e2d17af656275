/**
 * The IndexedDB cache of downloaded model files: database "hearth-model-files", separate from
 * the app's database because its blobs are large and its lifecycle independent (clearing the
 * cache never touches models, checkpoints or jobs, and their migrations never rewrite gigabytes).
 *
 * A file is a record in `files` plus its bytes as consecutive Blob chunks in `chunks`, so an
 * interrupted download keeps every chunk written so far and resumes from there. The class below
 * satisfies the engine's ModelFileCache contract (src/engine/model/sources/file-cache.ts)
 * structurally; the store does not import the engine.
 * Not here: HTTP and resuming (engine/model/sources/download.ts).
 */
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';

export const MODEL_FILES_DB = 'hearth-model-files';

interface FileRecord {
  modelId: string;
  file: string;
  url: string;
  /** Bytes stored so far. */
  bytes: number;
  /** Size announced by the server, or the final size once complete. */
  total: number | null;
  /** Strong ETag or Last-Modified of the response the bytes came from (If-Range on resume). */
  validator: string | null;
  complete: boolean;
  /** The server answered 404: the repository has no such file (kept so offline loads need not ask). */
  missing?: boolean;
  chunkCount: number;
  updatedAt: number;
}

interface ChunkRecord {
  modelId: string;
  file: string;
  index: number;
  offset: number;
  blob: Blob;
}

interface ModelFilesDB extends DBSchema {
  files: { key: [string, string]; value: FileRecord; indexes: { 'by-model': string } };
  chunks: { key: [string, string, number]; value: ChunkRecord };
}

export interface StoredFileInfo {
  file: string;
  bytes: number;
  total: number | null;
  complete: boolean;
}

export interface StoredModelInfo {
  modelId: string;
  files: StoredFileInfo[];
  bytes: number;
  updatedAt: number;
}

/** Storage ran out while caching a file; nothing of the failed chunk was written. */
export class ModelFilesQuotaError extends Error {
  constructor(modelId: string, file: string) {
    super(
      `Not enough browser storage to cache ${modelId}/${file}; free space or remove cached models and load again (the download resumes).`,
    );
    this.name = 'ModelFilesQuotaError';
  }
}

const chunkRange = (modelId: string, file: string) => IDBKeyRange.bound([modelId, file, 0], [modelId, file, Infinity]);
// Arrays sort after strings and numbers, so [id, []] is above every [id, file, index] key.
const modelRange = (modelId: string) => IDBKeyRange.bound([modelId], [modelId, []]);

export class IdbModelFileCache {
  private db: Promise<IDBPDatabase<ModelFilesDB>> | null = null;

  constructor(private readonly name: string = MODEL_FILES_DB) {}

  private open(): Promise<IDBPDatabase<ModelFilesDB>> {
    this.db ??= openDB<ModelFilesDB>(this.name, 1, {
      upgrade(db, oldVersion) {
        if (oldVersion < 1) {
          db.createObjectStore('files', { keyPath: ['modelId', 'file'] }).createIndex('by-model', 'modelId');
          db.createObjectStore('chunks', { keyPath: ['modelId', 'file', 'index'] });
        }
      },
      // Another tab wants a newer version: step aside so its upgrade can run; we reopen lazily.
      blocking: () => this.close(),
      terminated: () => {
        this.db = null;
      },
    });
    return this.db;
  }

  close(): void {
    const db = this.db;
    this.db = null;
    void db?.then((d) => d.close());
  }

  async get(modelId: string, file: string): Promise<Blob | null> {
    const db = await this.open();
    const tx = db.transaction(['files', 'chunks']);
    const [record, chunks] = await Promise.all([
      tx.objectStore('files').get([modelId, file]),
      tx.objectStore('chunks').getAll(chunkRange(modelId, file)),
      tx.done,
    ]);
    if (!record?.complete) return null;
    return new Blob(chunks.map((c) => c.blob));
  }

  async partial(modelId: string, file: string): Promise<{ bytes: number; validator: string | null; total: number | null } | null> {
    const record = await (await this.open()).get('files', [modelId, file]);
    return record && !record.missing ? { bytes: record.bytes, validator: record.validator, total: record.total } : null;
  }

  async isMissing(modelId: string, file: string): Promise<boolean> {
    return (await (await this.open()).get('files', [modelId, file]))?.missing === true;
  }

  async markMissing(modelId: string, file: string): Promise<void> {
    const db = await this.open();
    const tx = db.transaction(['files', 'chunks'], 'readwrite');
    const record: FileRecord = {
      modelId,
      file,
      url: '',
      bytes: 0,
      total: null,
      validator: null,
      complete: false,
      missing: true,
      chunkCount: 0,
      updatedAt: Date.now(),
    };
    await Promise.all([tx.objectStore('chunks').delete(chunkRange(modelId, file)), tx.objectStore('files').put(record), tx.done]);
  }

  async append(
    modelId: string,
    file: string,
    offset: number,
    data: Uint8Array,
    meta: { validator: string | null; total: number | null; url: string },
  ): Promise<void> {
    const db = await this.open();
    const blob = new Blob([data as BlobPart]);
    const tx = db.transaction(['files', 'chunks'], 'readwrite');
    const files = tx.objectStore('files');
    await quotaGuarded(tx, modelId, file, async () => {
      const stored = await files.get([modelId, file]);
      const record: FileRecord =
        stored && !stored.missing
          ? stored
          : {
              modelId,
              file,
              url: meta.url,
              bytes: 0,
              total: null,
              validator: null,
              complete: false,
              chunkCount: 0,
              updatedAt: 0,
            };
      if (record.complete) throw new Error(`${modelId}/${file} is already complete in the cache`);
      if (record.bytes !== offset) throw new Error(`${modelId}/${file}: append at ${offset} but ${record.bytes} bytes are cached`);
      await Promise.all([
        tx.objectStore('chunks').put({ modelId, file, index: record.chunkCount, offset, blob }),
        files.put({
          ...record,
          url: meta.url,
          bytes: record.bytes + data.byteLength,
          total: meta.total,
          validator: meta.validator,
          chunkCount: record.chunkCount + 1,
          updatedAt: Date.now(),
        }),
        tx.done,
      ]);
    });
  }

  async complete(modelId: string, file: string): Promise<Blob> {
    const db = await this.open();
    const tx = db.transaction(['files', 'chunks'], 'readwrite');
    // Marking the file complete rewrites its record: a full quota refuses that too.
    return quotaGuarded(tx, modelId, file, async () => {
      const record = await tx.objectStore('files').get([modelId, file]);
      if (!record) throw new Error(`${modelId}/${file}: nothing cached to complete`);
      const [chunks] = await Promise.all([
        tx.objectStore('chunks').getAll(chunkRange(modelId, file)),
        tx.objectStore('files').put({ ...record, complete: true, total: record.bytes, updatedAt: Date.now() }),
        tx.done,
      ]);
      return new Blob(chunks.map((c) => c.blob));
    });
  }

  async discard(modelId: string, file: string): Promise<void> {
    const db = await this.open();
    const tx = db.transaction(['files', 'chunks'], 'readwrite');
    await Promise.all([
      tx.objectStore('files').delete([modelId, file]),
      tx.objectStore('chunks').delete(chunkRange(modelId, file)),
      tx.done,
    ]);
  }

  /** Removes every file of a model, complete or partial, in one transaction. */
  async removeModel(modelId: string): Promise<void> {
    const db = await this.open();
    const tx = db.transaction(['files', 'chunks'], 'readwrite');
    await Promise.all([tx.objectStore('files').delete(modelRange(modelId)), tx.objectStore('chunks').delete(modelRange(modelId)), tx.done]);
  }

  async listModels(): Promise<StoredModelInfo[]> {
    const records = (await (await this.open()).getAll('files')).filter((r) => !r.missing);
    const byModel = new Map<string, FileRecord[]>();
    for (const r of records) {
      const list = byModel.get(r.modelId) ?? [];
      list.push(r);
      byModel.set(r.modelId, list);
    }
    return [...byModel].map(([modelId, files]) => ({
      modelId,
      files: files.map((f) => ({ file: f.file, bytes: f.bytes, total: f.total, complete: f.complete })),
      bytes: files.reduce((s, f) => s + f.bytes, 0),
      updatedAt: Math.max(...files.map((f) => f.updatedAt)),
    }));
  }
}

/**
 * Runs a write of one file's records in `tx`. On failure the transaction is aborted (nothing of the
 * write lands) and a full quota becomes ModelFilesQuotaError.
 */
async function quotaGuarded<T>(
  tx: { done: Promise<void>; error: DOMException | null; abort(): void },
  modelId: string,
  file: string,
  write: () => Promise<T>,
): Promise<T> {
  tx.done.catch(() => {}); // `write` awaits it; this only keeps an early abort from being "unhandled"
  try {
    return await write();
  } catch (e) {
    if (tx.error === null) tx.abort();
    throw isQuotaError(e) || isQuotaError(tx.error) ? new ModelFilesQuotaError(modelId, file) : e;
  }
}

function isQuotaError(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'QuotaExceededError';
}
