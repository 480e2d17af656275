/**
 * Split GGUF files (llama.cpp's gguf-split): a model stored as `<name>-00001-of-0000N.gguf` ...
 * `<name>-0000N-of-0000N.gguf`, each part a GGUF of its own with `split.no` (0-based),
 * `split.count` and `split.tensors.count`; the first part carries all the metadata, every part
 * some of the tensors (tools/gguf-split/gguf-split.cpp, `llama_split_prefix`).
 *
 * Here: ordering the file names given into parts (every part present, once), and checking each
 * part's split keys against its place. Not here: reading the parts (gguf-reader.ts), loading.
 */
import { GgufError, ggufValue, type GgufFile } from './gguf-reader';

/** More parts than any real model uses (a 405B model at Q8 is ~10 parts of 48 GB). */
export const MAX_GGUF_PARTS = 256;

const SPLIT_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;

/** The file names as parts in order: one .gguf, or every part of one split model. */
export function orderGgufParts(files: readonly string[]): string[] {
  if (files.length === 0) throw new GgufError('no GGUF file given');
  if (files.length > MAX_GGUF_PARTS) throw new GgufError(`${files.length} GGUF files given (at most ${MAX_GGUF_PARTS} parts)`);
  for (const f of files) if (!f.toLowerCase().endsWith('.gguf')) throw new GgufError(`${f} is not a .gguf file`);
  const parsed = files.map((f) => ({ file: f, m: SPLIT_NAME.exec(f) }));
  if (files.length === 1 && (!parsed[0].m || Number(parsed[0].m[3]) === 1)) return [...files];
  const split = parsed.filter((p) => p.m);
  if (split.length !== files.length) {
    throw new GgufError(
      `${files.join(', ')}: several files given, but ${parsed.find((p) => !p.m)!.file} is not named as a part (<name>-00001-of-0000N.gguf)`,
    );
  }
  const [prefix, count] = [split[0].m![1], Number(split[0].m![3])];
  const parts: string[] = new Array<string>(count);
  for (const { file, m } of split) {
    if (m![1] !== prefix || Number(m![3]) !== count) throw new GgufError(`${file} is not a part of ${prefix} in ${count} parts`);
    const no = Number(m![2]);
    if (no < 1 || no > count) throw new GgufError(`${file}: part ${no} of ${count} does not exist`);
    if (parts[no - 1]) throw new GgufError(`${file} is given twice`);
    parts[no - 1] = file;
  }
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !parts[i]);
  if (missing.length) {
    const name = (i: number) => `${prefix}-${String(i + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`;
    throw new GgufError(`${prefix} is split in ${count} parts; missing: ${missing.slice(0, 8).map(name).join(', ')}`);
  }
  return parts;
}

/** Checks a part's `split.*` keys: its number, the part count, and (over all parts) the tensor count. */
export function checkSplitPart(file: GgufFile, name: string, index: number, count: number, totalTensors?: number): void {
  const no = ggufValue(file, 'split.no');
  const n = ggufValue(file, 'split.count');
  const tensors = ggufValue(file, 'split.tensors.count');
  if (count === 1 && no === undefined && n === undefined) return;
  if (n !== count) {
    throw new GgufError(
      n === undefined
        ? `${name}: metadata key split.count is missing (given as part ${index + 1} of ${count})`
        : `${name}: metadata key split.count is ${String(n)}, but ${count} part(s) were given`,
    );
  }
  if (no !== index) throw new GgufError(`${name}: metadata key split.no is ${String(no)}, expected ${index} for part ${index + 1}`);
  if (typeof tensors !== 'number') throw new GgufError(`${name}: metadata key split.tensors.count is missing`);
  if (totalTensors !== undefined && tensors !== totalTensors) {
    throw new GgufError(`${name}: metadata key split.tensors.count is ${tensors}, but the parts hold ${totalTensors} tensors`);
  }
}
