/**
 * FilesSource: a repository the user picked from disk (an <input type=file multiple> selection or
 * a whole folder via webkitdirectory). Files are matched by name; when a folder was picked, a file
 * at its top level wins over a same-named file deeper down (e.g. onnx/ or original/ copies).
 * Files are read lazily from the File objects, nothing is copied or cached.
 */
import type { ModelSource } from './source';

/** The part of File this needs (a browser File, or a Node File from fs.openAsBlob). */
export interface PickedFile extends Blob {
  readonly name: string;
  readonly webkitRelativePath?: string;
}

export class FilesSource implements ModelSource {
  readonly id: string;
  readonly label: string;
  private readonly byName = new Map<string, PickedFile>();

  constructor(files: Iterable<PickedFile>, id?: string) {
    const depth = (f: PickedFile) => (f.webkitRelativePath ? f.webkitRelativePath.split('/').length : 1);
    const all = [...files];
    for (const f of all) {
      const name = f.name;
      const prev = this.byName.get(name);
      if (!prev || depth(f) < depth(prev)) this.byName.set(name, f);
    }
    const folder = all.find((f) => f.webkitRelativePath)?.webkitRelativePath?.split('/')[0];
    this.id =
      id ??
      `picked:${
        folder ??
        all
          .map((f) => f.name)
          .sort()
          .join(',')
      }`;
    this.label = folder ? `picked folder "${folder}"` : 'picked files';
  }

  async list(): Promise<string[]> {
    return [...this.byName.keys()].sort();
  }

  async open(file: string): Promise<Blob | null> {
    return this.byName.get(file) ?? null;
  }
}
