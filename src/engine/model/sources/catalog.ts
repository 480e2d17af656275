/**
 * The bundled-model catalogue: public/models/index.json, written by `npm run make-models`.
 * Format: {"models": [{id, path, architecture, parameters, bytes, default, description, files}]},
 * `path` relative to the app's base URL ("models/tiny-chat/"), `files` the model's file names.
 * The platform's base-model list (src/service/base-models/catalog.ts) reads the same file; this module
 * turns an entry into a ModelSource for the loader.
 * Not here: models downloaded from Hugging Face (UrlSource + the IndexedDB file cache).
 */
import { z } from 'zod';
import { BundledSource } from './bundled-source';
import type { ModelFileCache } from './file-cache';

export const CATALOG_PATH = 'models/index.json';

const CatalogEntrySchema = z.object({
  id: z.string().min(1),
  path: z.string().min(1),
  architecture: z.enum(['llama', 'qwen2', 'qwen3']),
  parameters: z.number().int().positive(),
  bytes: z.number().int().positive(),
  default: z.boolean().default(false),
  description: z.string().default(''),
  files: z.array(z.string()).optional(),
});
const CatalogSchema = z.object({ models: z.array(CatalogEntrySchema) });

export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;

/** Validates index.json; an error names the offending field. */
export function parseCatalog(json: unknown): CatalogEntry[] {
  const parsed = CatalogSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${CATALOG_PATH}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const ids = new Set<string>();
  for (const m of parsed.data.models) {
    if (ids.has(m.id)) throw new Error(`${CATALOG_PATH}: model id "${m.id}" appears twice`);
    ids.add(m.id);
  }
  return parsed.data.models;
}

/** Reads the catalogue relative to the app's base URL (default: the current location). */
export async function fetchCatalog(baseUrl?: string, fetchFn: typeof fetch = fetch): Promise<CatalogEntry[]> {
  const base = baseUrl ?? (globalThis as { location?: { href: string } }).location?.href;
  if (!base) throw new Error('fetchCatalog needs a base URL outside a browser');
  const url = new URL(CATALOG_PATH, base).href;
  const res = await fetchFn(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return parseCatalog(await res.json());
}

/** The model marked default (the first one if none is marked). */
export function defaultCatalogEntry(entries: readonly CatalogEntry[]): CatalogEntry | undefined {
  return entries.find((e) => e.default) ?? entries[0];
}

/** A source for a catalogue entry: fetched from `baseUrl` in a browser, read from public/ in Node. */
export function bundledSource(
  entry: CatalogEntry,
  options: { baseUrl?: string; cache?: ModelFileCache | null; fetch?: typeof fetch } = {},
): BundledSource {
  return new BundledSource(entry.path, { id: entry.id, files: entry.files, ...options });
}
