/**
 * ModelSource: where a model repository's files come from. Implementations: UrlSource (a URL base
 * or a Hugging Face repo id), BundledSource (the app's public/models/), FilesSource (files the
 * user picked), DirectorySource (a folder on disk, Node). repo.ts reads a repository through this
 * interface only, so loading and validation are the same whatever the origin.
 * Not here: caching and resuming downloads (download.ts, file-cache.ts).
 */

/** Download progress of one file; `total` is null while the server has not said. */
export interface DownloadProgress {
  file: string;
  loaded: number;
  total: number | null;
  /** Recent transfer rate; 0 for a cache hit. */
  bytesPerSecond: number;
  /** The bytes came from the local cache, not the network. */
  fromCache?: boolean;
}

export interface FileRequest {
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
}

export interface ModelSource {
  /** Stable identity of the repository: the cache key ("org/name", a URL, "hearth/tiny-chat"). */
  readonly id: string;
  /** Where the files come from, for messages ("https://huggingface.co/org/name", "picked files"). */
  readonly label: string;
  /** The file names the source has, when it can tell without probing; null otherwise. */
  list(): Promise<string[] | null>;
  /** The file, or null when the repository has no such file. Other failures throw SourceError. */
  open(file: string, request?: FileRequest): Promise<Blob | null>;
}

/** A file could not be fetched or read (network, HTTP status, access); the message says which and why. */
export class SourceError extends Error {
  constructor(
    message: string,
    /** HTTP status when the failure was an HTTP answer. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}
