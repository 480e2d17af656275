/**
 * DirectorySource: a repository in a folder on disk, for Node (scripts, benchmarks, tests).
 * Files are opened with fs.openAsBlob, so tensors are read from disk on demand, not loaded whole.
 * node:fs is imported lazily so that importing this module in a browser bundle costs nothing.
 */
import type { ModelSource } from './source';
import { SourceError } from './source';

type NodeFs = typeof import('node:fs');

async function nodeFs(): Promise<NodeFs> {
  const name = 'node:fs'; // a variable keeps bundlers from resolving node:fs for the browser
  return (await import(/* @vite-ignore */ name)) as NodeFs;
}

export class DirectorySource implements ModelSource {
  readonly id: string;
  readonly label: string;
  private readonly dir: string;

  /** `dir`: a path or a file: URL; `id` defaults to the path. */
  constructor(dir: string | URL, id?: string) {
    this.dir = (typeof dir === 'string' ? dir : decodeURIComponent(dir.pathname)).replace(/\/*$/, '/');
    this.id = id ?? this.dir;
    this.label = this.dir;
  }

  async list(): Promise<string[]> {
    const fs = await nodeFs();
    return (await fs.promises.readdir(this.dir, { withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => e.name)
      .sort();
  }

  async open(file: string): Promise<Blob | null> {
    const fs = await nodeFs();
    const path = this.dir + file;
    try {
      return await fs.openAsBlob(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new SourceError(`${file}: cannot read ${path} (${(e as Error).message})`);
    }
  }
}
