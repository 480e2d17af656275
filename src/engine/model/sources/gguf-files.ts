/**
 * GGUF file names in a repository: which name is a GGUF file, the parts of a split file
 * (llama.cpp's gguf-split names them `<name>-00001-of-00003.gguf` ... `-00003-of-00003.gguf`,
 * examples/gguf-split/gguf-split.cpp `split_path`), and the model's name without the part suffix.
 *
 * Given any one part, every part is known from its name alone: a mirror has no file listing, so
 * the parts are asked for by name like any other file (404 names the missing part).
 * Not here: reading the files (model/gguf), downloading them (download.ts).
 */
import { MAX_GGUF_PARTS } from '../gguf/gguf-split';

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;

/** A path inside a repository that names a .gguf file: no "..", no leading "/", no empty segment. */
export function isGgufPath(path: string): boolean {
  if (!/\.gguf$/i.test(path) || path.startsWith('/') || path.includes('\\')) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

/**
 * The ordered parts of the GGUF model `file` names: `[file]` for a single file, every part for a
 * split one (whichever part was named). Throws with the reason when a split name is impossible.
 */
export function ggufParts(file: string): string[] {
  const m = SPLIT.exec(file);
  if (!m) return [file];
  const [, stem, no, of] = m;
  const count = Number(of);
  if (count < 1 || count > MAX_GGUF_PARTS || Number(no) < 1 || Number(no) > count) {
    throw new Error(`${file}: part ${Number(no)} of ${count} is not a split GGUF name (parts 1 to ${MAX_GGUF_PARTS})`);
  }
  return Array.from({ length: count }, (_, i) => `${stem}-${String(i + 1).padStart(5, '0')}-of-${of}.gguf`);
}

/** The model's file name without a split suffix: "a/Model-Q4_K_M-00001-of-00002.gguf" -> "a/Model-Q4_K_M.gguf". */
export function ggufModelFile(file: string): string {
  const m = SPLIT.exec(file);
  return m ? `${m[1]}.gguf` : file;
}

/** The name shown for a GGUF model: its file name without folders, split suffix or extension. */
export function ggufDisplayName(file: string): string {
  return ggufModelFile(file)
    .replace(/^.*\//, '')
    .replace(/\.gguf$/i, '');
}
