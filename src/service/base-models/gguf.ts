/**
 * GGUF base models (issue 11): what a download request for a .gguf file means (its id, its folder,
 * its parts), the header check that refuses a file Hearth cannot run before it is downloaded, and
 * which picked files make one GGUF model.
 *
 * - Ids: a file of a Hugging Face repository is "org/name/<file>" ("@revision" appended off main),
 *   a split file named without its part suffix; a URL's id is the URL without credentials. Each is
 *   its own cache key: the Q4_K_M and Q8_0 files of one repository are two models.
 * - The header is read with range requests (gguf-probe.ts): an unknown architecture, a missing key
 *   or an unsupported tensor type is a 422 naming it, and nothing is stored; the bytes read are kept
 *   as the start of the file, so the download continues after them.
 *
 * Not here: the download itself (downloads.ts), reading GGUF (engine/model/gguf).
 */
import { readGguf, GgufError, type GgufFile } from '../../engine/model/gguf/gguf-reader';
import { ggufModelConfig } from '../../engine/model/gguf/gguf-model';
import { ggufQuantization } from '../../engine/model/gguf/gguf-quantization';
import { blobBytes } from '../../engine/model/files/safetensors';
import type { ModelFileCache } from '../../engine/model/sources/file-cache';
import { ggufModelFile, ggufParts, isGgufPath } from '../../engine/model/sources/gguf-files';
import { probeGgufHeader } from '../../engine/model/sources/gguf-probe';
import type { ModelSource } from '../../engine/model/sources/source';
import { withoutCredentials, type UrlSource } from '../../engine/model/sources/url-source';
import { InvalidInputError } from '../errors';

export interface GgufTarget {
  /** Catalogue id and cache key. */
  id: string;
  /** Where the files are: the repo id, or the folder URL (credentials kept: it is fetched). */
  location: string;
  /** The parts in order (one for a single file). */
  files: string[];
}

function parts(file: string, loc: string[]): string[] {
  if (!isGgufPath(file)) throw new InvalidInputError(loc, `"${file}" is not a .gguf file in the repository.`, file);
  try {
    return ggufParts(file);
  } catch (e) {
    throw new InvalidInputError(loc, (e as Error).message, file);
  }
}

/** A file of a Hugging Face repository. */
export function hubGgufTarget(repo: string, file: string, revision: string | null): GgufTarget {
  const files = parts(file, ['body', 'source', 'file']);
  const at = revision && revision !== 'main' ? `@${revision}` : '';
  return { id: `${repo}/${ggufModelFile(file)}${at}`, location: repo, files };
}

/** A URL whose path ends in .gguf; null for any other URL (a folder laid out like a repository). */
export function urlGgufTarget(url: string): GgufTarget | null {
  const u = new URL(url);
  if (!/\.gguf$/i.test(u.pathname)) return null;
  const slash = u.pathname.lastIndexOf('/');
  const file = decodeURIComponent(u.pathname.slice(slash + 1));
  const files = parts(file, ['body', 'source', 'url']);
  u.pathname = u.pathname.slice(0, slash + 1);
  u.search = '';
  u.hash = '';
  return { id: withoutCredentials(url), location: u.href, files };
}

/** What a GGUF's header says, for the base model's record. */
export interface GgufFacts {
  architecture: string;
  quantization: string;
  maxPositionEmbeddings: number;
}

/** Whether Hearth can run this header: a GgufError names the key, architecture or tensor. */
function factsOf(header: GgufFile, file: string, partCount: number): GgufFacts {
  const config = ggufModelConfig(header, file);
  const count = header.metadata.get('split.count')?.value;
  if (typeof count === 'number' && count !== partCount) {
    throw new GgufError(`${file}: its metadata says split.count ${count}, but its name says ${partCount} parts`);
  }
  return { architecture: config.arch, quantization: ggufQuantization(header), maxPositionEmbeddings: config.maxPositionEmbeddings };
}

/**
 * Reads the first part's header from the server before the download starts. Returns what it says
 * (null when the server could not tell: no ranges, unreachable) and stores the bytes read as the
 * file's first bytes. A file Hearth cannot run, or one that is not there, is a 422.
 */
export async function checkGgufHeader(
  source: UrlSource,
  target: GgufTarget,
  cache: ModelFileCache,
  loc: string[],
  fetchFn: typeof fetch,
): Promise<GgufFacts | null> {
  const first = target.files[0];
  const refused = (e: unknown): never => {
    if (e instanceof GgufError) throw new InvalidInputError(loc, `Hearth cannot run this GGUF: ${e.message}`, first);
    throw e;
  };
  const probe = await probeGgufHeader({ url: source.fileUrl(first), file: first, fetch: fetchFn, headers: source.headers }).catch(refused);
  if (probe.status === 'missing') {
    throw new InvalidInputError(loc, `${first} was not found in ${source.label}.`, first, 'value_error', { file: first });
  }
  if (probe.status === 'skipped') return null;
  let facts: GgufFacts;
  try {
    facts = factsOf(probe.header, first, target.files.length);
  } catch (e) {
    return refused(e);
  }
  if (!(await cache.partial(source.id, first))) {
    const meta = { validator: probe.validator, total: probe.total, url: withoutCredentials(source.fileUrl(first)) };
    // No room for the header is no verdict on the file: the download then pauses with the quota's message.
    await cache.append(source.id, first, 0, probe.prefix, meta).catch(() => cache.discard(source.id, first));
  }
  return facts;
}

/** The header of a complete GGUF's first part (downloaded or picked), checked like a download's. */
export async function ggufFactsOf(source: ModelSource, files: readonly string[]): Promise<GgufFacts> {
  const blob = await source.open(files[0]);
  if (!blob) throw new GgufError(`${files[0]} is missing from ${source.label}`);
  return factsOf(await readGguf(blobBytes(blob), files[0]), files[0], files.length);
}

/**
 * The GGUF model among picked files: null when none is a .gguf; its ordered parts otherwise. A
 * split model must come with every part, and the files must be one model.
 */
export function pickedGgufFiles(names: readonly string[]): string[] | null {
  const gguf = names.filter((n) => /\.gguf$/i.test(n));
  if (gguf.length === 0) return null;
  const loc = ['body', 'files'];
  const all = parts(gguf[0], loc);
  const missing = all.filter((p) => !gguf.includes(p));
  const extra = gguf.filter((n) => !all.includes(n));
  if (extra.length > 0) throw new InvalidInputError(loc, `Pick one GGUF model at a time (got ${gguf.join(', ')}).`, gguf);
  if (missing.length > 0) throw new InvalidInputError(loc, `The split GGUF model also needs ${missing.join(', ')}.`, gguf);
  return all;
}
