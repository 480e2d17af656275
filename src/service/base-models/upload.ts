/**
 * Writing an uploaded model's files into the model-file cache as the request body streams in
 * (issue 10, item 6): each file part goes to storage in 4 MiB chunks while the next bytes are
 * still arriving, so a 2 GiB upload never sits in memory, and a body cut at its cap (a 413 from
 * the stream) or a full quota stops the writing at once. The caller removes what was written
 * when anything fails.
 *
 * Not here: parsing multipart (src/api/multipart-stream.ts), validating the model and keeping its
 * record (uploaded-model.ts).
 */
import type { ModelFileCache } from '../../engine/model/sources/file-cache';
import { InvalidInputError } from '../errors';

/** One part of an upload's form, as the HTTP layer reads it: a file, or a text field when `filename` is null. */
export interface UploadPart {
  name: string;
  filename: string | null;
  body: AsyncIterable<Uint8Array>;
}

/** What an upload's form held besides its file bytes. */
export interface StoredUpload {
  /** The stored files' names (no folders), in the order they came. */
  files: string[];
  /** The `id` field, when one was sent and not empty. */
  id: string | undefined;
  /** The `quantization` field ("q8_0", "q4_k", "none"), when one was sent and not empty: checked by the caller. */
  quantization: string | undefined;
}

const CHUNK = 4 << 20;
/** Longest `id` field: an "org/name" id is far shorter. */
const MAX_ID_BYTES = 1024;

/** Stores every file part of `parts` under `cacheKey` (a later file of the same name replaces an earlier one). */
export async function storeUploadParts(cache: ModelFileCache, cacheKey: string, parts: AsyncIterable<UploadPart>): Promise<StoredUpload> {
  const files: string[] = [];
  let id: string | undefined;
  let quantization: string | undefined;
  for await (const part of parts) {
    if (part.filename === null) {
      const value = await fieldText(part);
      if (part.name === 'id' && value !== '') id = value;
      if (part.name === 'quantization' && value !== '') quantization = value;
      continue;
    }
    // A folder pick may send "folder/config.json": the model's files are matched by name.
    const name = part.filename.split(/[\\/]/).pop() || part.name;
    if (files.includes(name)) await cache.discard(cacheKey, name);
    else files.push(name);
    await storeFile(cache, cacheKey, name, part.body);
  }
  return { files, id, quantization };
}

async function storeFile(cache: ModelFileCache, cacheKey: string, name: string, body: AsyncIterable<Uint8Array>): Promise<void> {
  const meta = { validator: null, total: null, url: '' };
  let offset = 0;
  let buffer = new Uint8Array(CHUNK);
  let filled = 0;
  const flush = async () => {
    await cache.append(cacheKey, name, offset, buffer.subarray(0, filled), meta);
    offset += filled;
    filled = 0;
    // The cache may keep a view of what it was given: fill a fresh buffer next.
    buffer = new Uint8Array(CHUNK);
  };
  for await (let chunk of body) {
    while (chunk.length > 0) {
      const n = Math.min(chunk.length, CHUNK - filled);
      buffer.set(chunk.subarray(0, n), filled);
      filled += n;
      chunk = chunk.subarray(n);
      if (filled === CHUNK) await flush();
    }
  }
  // An empty file still gets its record, so the loader finds it.
  if (filled > 0 || offset === 0) await flush();
  await cache.complete(cacheKey, name);
}

async function fieldText(part: UploadPart): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of part.body) {
    total += chunk.length;
    if (total > MAX_ID_BYTES) {
      throw new InvalidInputError(
        ['body', part.name],
        `The field ${part.name} is longer than ${MAX_ID_BYTES} bytes.`,
        null,
        'string_too_long',
        {
          max_length: MAX_ID_BYTES,
        },
      );
    }
    chunks.push(chunk.slice());
  }
  return new TextDecoder().decode(await new Blob(chunks as BlobPart[]).arrayBuffer());
}
