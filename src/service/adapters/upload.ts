/**
 * The PEFT files of an adapter import: adapter_config.json and adapter_model.safetensors given
 * directly, or inside one zip. A zip is untrusted (issue 10, item 3): a few kilobytes of deflate
 * can claim gigabytes, so only the two PEFT file names are ever inflated, and the entry count and
 * each file's uncompressed size are checked from the zip's central directory before anything is
 * inflated. fflate inflates an entry into a buffer of the size the directory declares and never
 * grows it, so a directory that understates a size cannot make it allocate more; the compressed
 * size is checked too, so the inflate loop's work is bounded by what the limits allow.
 *
 * Not here: what the files must hold (parse.ts parses the config, archive.ts checks
 * the tensors against the base model).
 * Reference: PEFT `save_pretrained` file names; APPNOTE.TXT (the zip central directory).
 */
import { unzipSync, type UnzipFileInfo } from 'fflate';
import { ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE, type AdapterFiles } from './peft-files';
import { InvalidInputError } from '../errors';

/** README.md "Budgets for untrusted files and programs" lists these. */
export const ADAPTER_ZIP_LIMITS = {
  /** Entries in the zip's directory (a saved PEFT folder with its tokenizer files has about 12). */
  maxEntries: 64,
  /** Uncompressed bytes of adapter_config.json. */
  maxConfigBytes: 1024 * 1024,
  /**
   * Uncompressed bytes of adapter_model.safetensors: trained f32 weights hardly compress, so
   * what fits the 32 MiB request body is far below this; a larger claim is a zip bomb.
   */
  maxModelBytes: 256 * 1024 * 1024,
};

/** PyTorch's pickle format: never unpickled, refused with the way out. */
const PICKLED_MODEL_FILE = 'adapter_model.bin';
const FILES_LOC = ['body', 'files'];

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** The two adapter files from an upload: given directly, or inside one zip. */
export function adapterFromUpload(files: { name: string; bytes: Uint8Array }[]): AdapterFiles {
  const byName =
    files.length === 1 && files[0].name.endsWith('.zip')
      ? unzipAdapter(files[0].name, files[0].bytes)
      : new Map(files.map((f) => [f.name, f.bytes]));
  const adapterConfig = byName.get(ADAPTER_CONFIG_FILE);
  const adapterModel = byName.get(ADAPTER_MODEL_FILE);
  if (!adapterModel && byName.has(PICKLED_MODEL_FILE)) {
    throw new InvalidInputError(
      FILES_LOC,
      `${PICKLED_MODEL_FILE} is a PyTorch pickle, which Hearth does not read: save the adapter with safe_serialization=True (the default) to get ${ADAPTER_MODEL_FILE}.`,
      [...byName.keys()],
    );
  }
  if (!adapterConfig || !adapterModel) {
    throw new InvalidInputError(
      FILES_LOC,
      `Upload ${ADAPTER_CONFIG_FILE} and ${ADAPTER_MODEL_FILE} (or one zip holding them), as PEFT's save_pretrained writes them; got ${[...byName.keys()].join(', ') || 'no files'}.`,
      [...byName.keys()],
    );
  }
  return { adapterConfig, adapterModel };
}

/** A limit of ADAPTER_ZIP_LIMITS the directory breaks (thrown from fflate's filter, before inflating). */
class ZipLimitError extends Error {}

/**
 * Inflates only adapter_config.json and adapter_model.safetensors (any folder), after checking
 * their sizes; every other entry is only counted, and named in the result (with empty bytes) so
 * an error can say what the zip held.
 */
function unzipAdapter(zipName: string, bytes: Uint8Array): Map<string, Uint8Array> {
  const limits = ADAPTER_ZIP_LIMITS;
  const seen = new Map<string, Uint8Array>();
  let entries = 0;
  const filter = (entry: UnzipFileInfo): boolean => {
    if (++entries > limits.maxEntries) throw new ZipLimitError(`it has more than ${limits.maxEntries} entries`);
    const name = baseName(entry.name);
    const cap = name === ADAPTER_CONFIG_FILE ? limits.maxConfigBytes : name === ADAPTER_MODEL_FILE ? limits.maxModelBytes : null;
    if (name !== '' && !seen.has(name)) seen.set(name, new Uint8Array(0));
    else if (cap !== null) throw new ZipLimitError(`it holds ${name} twice`);
    if (cap === null) return false;
    if (entry.originalSize > cap)
      throw new ZipLimitError(`${entry.name} is ${entry.originalSize} bytes uncompressed, over the limit of ${cap}`);
    // Deflate never expands data by more than a few bytes per 16 KiB block: a larger compressed
    // size means a directory that lies about the uncompressed one.
    if (entry.size > entry.originalSize + (entry.originalSize >> 10) + 1024) {
      throw new ZipLimitError(`${entry.name} declares ${entry.originalSize} bytes uncompressed but ${entry.size} compressed`);
    }
    return true;
  };
  let inflated: Record<string, Uint8Array>;
  try {
    inflated = unzipSync(bytes, { filter });
  } catch (err) {
    if (err instanceof ZipLimitError) throw new InvalidInputError(FILES_LOC, `${zipName} is refused: ${err.message}.`, zipName);
    throw new InvalidInputError(FILES_LOC, `${zipName} is not a readable zip: ${(err as Error).message}`, zipName);
  }
  for (const [path, data] of Object.entries(inflated)) seen.set(baseName(path), data);
  return seen;
}
