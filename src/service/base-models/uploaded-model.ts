/**
 * A base model added from picked files (the upload of the Models view): its files are stored as the
 * body streams in (upload.ts), then the loader validates them like a download, and only then is
 * its record written. `id` defaults to "local/<name>", the name from config.json's
 * `_name_or_path`, else its `model_type` ("local/qwen3"), numbered when taken ("local/qwen3-2").
 * Anything that fails (a body over its cap, a full quota, files that are no model) removes every
 * file the upload wrote.
 *
 * Not here: downloads and removal (downloads.ts), parsing multipart (src/api/multipart-stream.ts).
 */
import { loadRepository, type ModelFormat } from '../../engine/model/files/model-repository';
import type { QuantizeTarget } from '../../engine/tensor/dtype';
import { smallFileText, type LoadedModelFiles } from '../../engine/model/files/repo';
import { CachedSource } from '../../engine/model/sources/cached-source';
import type { ModelFileCache } from '../../engine/model/sources/file-cache';
import { ggufDisplayName } from '../../engine/model/sources/gguf-files';
import { SourceError } from '../../engine/model/sources/source';
import { isHfRepoId } from '../../engine/model/sources/url-source';
import { getBaseModel, putBaseModel } from '../../store/base-models';
import { ModelFilesQuotaError } from '../../store/model-files';
import type { BaseModelRecord, HearthDb } from '../../store/schema';
import { ConflictError, InsufficientStorageError, InvalidInputError } from '../errors';
import { newId } from '../ids';
import { ggufFactsOf, pickedGgufFiles } from './gguf';
import { formatOf, quantizedOnLoad, uploadQuantization } from './quantization';
import { recordSummary } from './record-summary';
import { storeUploadParts, type UploadPart } from './upload';

export interface UploadDeps {
  db: HearthDb;
  /** Where the files go. */
  cache: ModelFileCache;
  now(): number;
  /** Whether `id` is a bundled model's (an upload may not take its id). */
  isBundled(id: string): Promise<boolean>;
}

/** Stores and validates an upload, then writes its record; the caller refreshes the catalogue. */
export async function addUploadedModel(deps: UploadDeps, parts: AsyncIterable<UploadPart>): Promise<BaseModelRecord> {
  const cache = deps.cache;
  // The id may come after the files (or from config.json): the files get a key of their own.
  const cacheKey = `files:${newId()}`;
  let loaded!: LoadedModelFiles;
  let id: string;
  let gguf: Pick<BaseModelRecord, 'format' | 'ggufFiles' | 'quantization'> | null = null;
  let quantization: QuantizeTarget | null = null;
  try {
    const stored = await storeUploadParts(cache, cacheKey, parts);
    const requestedId = stored.id;
    // A GGUF model is its .gguf files alone (its config and tokenizer are in their metadata).
    const ggufFiles = pickedGgufFiles(stored.files);
    quantization = uploadQuantization(stored.quantization, !!ggufFiles);
    if (!ggufFiles && !stored.files.includes('config.json')) {
      const detail = stored.files.length === 0 ? 'No files were sent.' : 'The picked files have no config.json.';
      throw new InvalidInputError(['body', 'files'], detail, stored.files, stored.files.length === 0 ? 'missing' : 'value_error');
    }
    const source = new CachedSource(cacheKey, cache, 'the picked files');
    const format: ModelFormat = ggufFiles ? { type: 'gguf', files: ggufFiles } : formatOf({ quantizeOnLoad: quantization ?? undefined });
    // A GGUF's header is checked before its id is taken or its weights are read.
    const facts = ggufFiles ? await ggufFactsOf(source, ggufFiles).catch(pickedFilesError(ggufFiles)) : null;
    const taken = async (candidate: string) => (await deps.isBundled(candidate)) || (await getBaseModel(deps.db, candidate)) !== undefined;
    id =
      requestedId ??
      (ggufFiles
        ? `local/${idPart(ggufDisplayName(ggufFiles[0]))}`
        : await defaultUploadId((await cache.get(cacheKey, 'config.json')) ?? new Blob([])));
    if (!isHfRepoId(id)) throw new InvalidInputError(['body', 'id'], `"${id}" is not a model id: expected "org/name".`, id);
    if (requestedId !== undefined && (await taken(id))) {
      throw new ConflictError(`A base model with id ${id} exists already: remove it first or pick another id.`);
    }
    // A default id that is taken gets a number: uploading two folders without naming them both works.
    for (let n = 2, base = id; requestedId === undefined && (await taken(id)); n++) id = `${base}-${n}`;
    try {
      loaded = await loadRepository({ source, format });
    } catch (err) {
      if (err instanceof ModelFilesQuotaError || err instanceof SourceError) throw err;
      pickedFilesError(stored.files)(err);
    }
    if (ggufFiles) gguf = { format: 'gguf', ggufFiles, quantization: facts?.quantization ?? null };
  } catch (err) {
    await cache.removeModel(cacheKey);
    // Out of quota is the browser's storage, not the files: 507, with nothing of them kept.
    if (err instanceof ModelFilesQuotaError) throw new InsufficientStorageError(err.message);
    throw err;
  }
  const now = deps.now();
  const record: BaseModelRecord = {
    id,
    source: 'files',
    location: 'picked files',
    revision: null,
    hfBase: null,
    cacheKey,
    status: 'cached',
    error: null,
    ...recordSummary(loaded),
    ...(gguf ?? quantizedOnLoad(quantization)),
    startedAt: now,
    updatedAt: now,
  };
  // Files first, then the record (a crash between leaves bytes the start-up sweep removes); a
  // record that does not fit the quota (507) leaves none of the files either.
  await putBaseModel(deps.db, record).catch(async (err: unknown) => {
    await cache.removeModel(cacheKey);
    throw err;
  });
  return record;
}

/** The 422 for picked files the loader (or the GGUF header check) refused. */
function pickedFilesError(names: string[]): (err: unknown) => never {
  return (err) => {
    throw new InvalidInputError(
      ['body', 'files'],
      `The picked files are not a model Hearth can load: ${err instanceof Error ? err.message : String(err)}`,
      names,
    );
  };
}

/** The last segment of a path as the name part of an "org/name" id. */
function idPart(path: string): string {
  return (
    path
      .replace(/\/+$/, '')
      .split('/')
      .pop()
      ?.replace(/[^\w.-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '') || 'model'
  );
}

async function defaultUploadId(config: Blob): Promise<string> {
  let name = 'model';
  try {
    const json = JSON.parse(await smallFileText(config, 'config.json')) as { _name_or_path?: unknown; model_type?: unknown };
    const path = typeof json._name_or_path === 'string' ? json._name_or_path : typeof json.model_type === 'string' ? json.model_type : '';
    name = idPart(path);
  } catch {
    // The loader reports the broken config.json with its own message.
  }
  return `local/${name}`;
}
