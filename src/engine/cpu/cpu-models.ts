/**
 * A base model for the CPU backend: its repository read as for WebGPU (config, tokenizer, chat
 * templates, generation defaults: Hearth's own, so prompts tokenise the same on both backends)
 * plus the GGUF file(s) llama.cpp loads (cpu-gguf.ts).
 *
 * A GGUF model's files are used as they are, with the first part's header rewritten in memory. A
 * safetensors model (the bundled ones included) is written to GGUF once and kept in the model file
 * cache (IndexedDB in the app) under `cpuGgufCacheKey(id)`, like any download: the next load, in
 * this tab or after a reload, reads it from there.
 *
 * Not here: the conversion itself (cpu-gguf.ts), running the model (cpu-engine.ts).
 */
import { loadRepository, type ModelRepository } from '../model/files/model-repository';
import { readGguf } from '../model/gguf/gguf-reader';
import { orderGgufParts } from '../model/gguf/gguf-split';
import type { LoadedModelFiles, LoadOptions } from '../model/files/repo';
import { blobBytes } from '../model/files/safetensors';
import type { ModelFileCache } from '../model/sources/file-cache';
import { cpuGgufFromGguf, cpuGgufFromSafetensors, type SpecialIds } from './cpu-gguf';

const CPU_COPY = '#cpu-gguf';

/** The file cache key of a safetensors model's CPU GGUF (what base-model removal frees too). */
export function cpuGgufCacheKey(id: string): string {
  return `${id}${CPU_COPY}`;
}

/** The model id a file cache key is the CPU GGUF of, or null for any other key. */
export function cpuGgufModelId(cacheKey: string): string | null {
  return cacheKey.endsWith(CPU_COPY) ? cacheKey.slice(0, -CPU_COPY.length) : null;
}

/** The quantize-on-load choice is part of the file name: another choice makes another file. */
function cachedFileName(repo: ModelRepository): string {
  return repo.format.type === 'safetensors' && repo.format.quantize ? `model-${repo.format.quantize}.gguf` : 'model.gguf';
}

export interface CpuModelFiles {
  files: LoadedModelFiles;
  /** The GGUF parts llama.cpp loads, in order, named as wllama expects split parts. */
  gguf: File[];
}

function specialIds(files: LoadedModelFiles): SpecialIds {
  return { eos: files.tokenizer.eosTokenId ?? files.eosTokenIds[0] ?? null, bos: files.config.bosTokenId };
}

/** Stores a Blob in the file cache chunk by chunk (a model is too large for one IndexedDB value). */
async function store(cache: ModelFileCache, key: string, file: string, blob: Blob): Promise<Blob> {
  await cache.discard(key, file);
  const chunk = 16 * 2 ** 20;
  for (let offset = 0; offset < blob.size; offset += chunk) {
    const data = new Uint8Array(await blob.slice(offset, offset + chunk).arrayBuffer());
    await cache.append(key, file, offset, data, { validator: null, total: blob.size, url: `hearth:${key}/${file}` });
  }
  return cache.complete(key, file);
}

function asParts(blobs: Blob[]): File[] {
  const n = String(blobs.length).padStart(5, '0');
  return blobs.map((b, i) => new File([b], `model-${String(i + 1).padStart(5, '0')}-of-${n}.gguf`));
}

export async function loadCpuModel(
  id: string,
  repo: ModelRepository,
  cache: ModelFileCache | null,
  options: LoadOptions = {},
): Promise<CpuModelFiles> {
  const files = await loadRepository(repo, options);
  const ids = specialIds(files);
  if (repo.format.type === 'gguf') {
    const blobs: Blob[] = [];
    for (const name of orderGgufParts(repo.format.files)) {
      const blob = await repo.source.open(name, { signal: options.signal });
      if (!blob) throw new Error(`${name} is missing from ${repo.source.label}`);
      blobs.push(blob);
    }
    const first = await readGguf(blobBytes(blobs[0]), repo.format.files[0]);
    blobs[0] = cpuGgufFromGguf(blobs[0], first, files.config.vocabSize, ids);
    return { files, gguf: asParts(blobs) };
  }
  const key = cpuGgufCacheKey(id);
  const name = cachedFileName(repo);
  const cached = await cache?.get(key, name);
  if (cached) return { files, gguf: asParts([cached]) };
  const gguf = await cpuGgufFromSafetensors(files, ids);
  options.signal?.throwIfAborted();
  return { files, gguf: asParts([cache ? await store(cache, key, name, gguf) : gguf]) };
}
