/**
 * UrlSource: a model repository served over HTTP(S). Given a Hugging Face repo id ("org/name")
 * it reads `${hfBase}/org/name/resolve/${revision}/<file>` (hfBase defaults to
 * https://huggingface.co and can point at a mirror); given a URL it reads `<url>/<file>`.
 * Downloads go through downloadFile: progress, resume, and the cache when one is given.
 * Not here: listing a repository's files (the Hub API is not part of a mirror's contract, so
 * repo.ts asks for each file and treats 404 as "absent").
 */
import { downloadFile } from './download';
import type { ModelFileCache } from './file-cache';
import { HUB_BASE, hubHeaders, type HubCredentials } from './hub-auth';
import type { FileRequest, ModelSource } from './source';

export const DEFAULT_HF_BASE = HUB_BASE;

export interface UrlSourceOptions {
  /** Cache key and identity instead of the repo id or URL (one GGUF file of a repository holding several). */
  id?: string;
  cache?: ModelFileCache | null;
  /** Hugging Face (or mirror) base URL for repo ids. */
  hfBase?: string;
  /** Branch, tag or commit for repo ids (default "main"). */
  revision?: string;
  fetch?: typeof fetch;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** A Hugging Face token, sent only when the files are on the hub or the configured mirror (hub-auth.ts). */
  credentials?: HubCredentials | null;
  chunkBytes?: number;
  retries?: number;
  retryDelayMs?: number;
}

/** "org/name": letters, digits, '-', '_', '.' on both sides of one slash. */
export function isHfRepoId(value: string): boolean {
  return /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(value) && !value.includes('..');
}

/**
 * `url` without user name, password, query or fragment: what may be shown to others or used as a
 * key (ids, labels, cache keys). Credentials stay in the URL that is fetched only (issue 10, item 12).
 */
export function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.href;
  } catch {
    return url;
  }
}

/** `text` with the user-info part of every URL in it removed (error messages that quote a URL). */
export function redactCredentials(text: string): string {
  return text.replace(/(\b[a-z][\w+.-]*:\/\/)[^/\s@]*@/gi, '$1');
}

export class UrlSource implements ModelSource {
  readonly id: string;
  readonly label: string;
  /** Base URL ending in "/"; files are resolved against it. */
  readonly baseUrl: string;

  constructor(
    repoOrUrl: string,
    private readonly options: UrlSourceOptions = {},
  ) {
    if (/^https?:\/\//i.test(repoOrUrl)) {
      this.baseUrl = repoOrUrl.endsWith('/') ? repoOrUrl : repoOrUrl + '/';
      const shown = withoutCredentials(repoOrUrl);
      this.label = shown.endsWith('/') ? shown : shown + '/';
      this.id = options.id ?? this.label;
    } else if (isHfRepoId(repoOrUrl)) {
      const hfBase = (options.hfBase ?? DEFAULT_HF_BASE).replace(/\/+$/, '');
      const revision = options.revision ?? 'main';
      this.baseUrl = `${hfBase}/${repoOrUrl}/resolve/${encodeURIComponent(revision)}/`;
      this.id = options.id ?? (revision === 'main' ? repoOrUrl : `${repoOrUrl}@${revision}`);
      this.label = `${withoutCredentials(hfBase).replace(/\/+$/, '')}/${repoOrUrl}`;
    } else {
      throw new Error(`"${repoOrUrl}" is neither a Hugging Face repo id (org/name) nor an http(s) URL`);
    }
  }

  async list(): Promise<string[] | null> {
    return null;
  }

  /** The URL `file` is fetched from. */
  fileUrl(file: string): string {
    return this.baseUrl + file.split('/').map(encodeURIComponent).join('/');
  }

  /** The headers every request carries: the extra ones, and the token where it may go. */
  get headers(): Record<string, string> {
    return { ...this.options.headers, ...hubHeaders(this.baseUrl, this.options.credentials ?? null) };
  }

  open(file: string, request: FileRequest = {}): Promise<Blob | null> {
    return downloadFile({
      url: this.fileUrl(file),
      file,
      modelId: this.id,
      cache: this.options.cache ?? null,
      fetch: this.options.fetch,
      headers: this.headers,
      chunkBytes: this.options.chunkBytes,
      retries: this.options.retries,
      retryDelayMs: this.options.retryDelayMs,
      ...request,
    });
  }
}
