// Types of device-archive.mjs (plain JavaScript so that the GPU machine's bare Node runs it), for its unit test.

export interface PackEntry {
  /** The file's path inside the pack (relative, '/'-separated). */
  path: string;
  /** The file to read. */
  from: string;
}

export interface PackedFile {
  path: string;
  size: number;
  mode: number;
  /** sha256 of the content: the blob's name. */
  blob: string;
}

export function writePack(
  packDir: string,
  entries: PackEntry[],
  options?: { quality?: number; log?: (line: string) => void },
): { files: PackedFile[]; unpackedBytes: number; packBytes: number };
export function unpack(packDir: string, destDir: string): string[];
export function folderBytes(dir: string): number;
export function packBudget(sizes: { packBytes: number; treeBytes: number; limitBytes?: number; marginBytes?: number }): {
  ok: boolean;
  room: number;
  message: string;
};
export function mib(bytes: number): string;
