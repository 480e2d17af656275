/**
 * safetensors reader: validates the header exactly as the Rust reference does
 * (huggingface/safetensors `safetensors/src/tensor.rs`, `Metadata::validate`) and reads tensors
 * lazily, one at a time, from a Blob (a File, a cached IndexedDB blob, `fs.openAsBlob` in Node) or
 * from bytes already in memory, so a model of hundreds of MB is never held twice.
 *
 * Layout: u64 little-endian N, N bytes of UTF-8 JSON header, then the data buffer; each entry's
 * `data_offsets` [begin, end) is relative to the buffer; offsets tile the buffer from 0 with no gap
 * or overlap; end - begin = numel * dtype size; the file ends exactly at the last tensor.
 * Not here: writing (safetensors-writer.ts), sharded repositories and name/shape checks (repo.ts).
 */
import type { DType, FloatDType } from '../../tensor/dtype';
import type { TensorData } from '../../tensor/tensor-data';

/** Header bound of the Rust reader (`MAX_HEADER_SIZE`). */
export const MAX_HEADER_SIZE = 100_000_000;

/** Bits per element of every safetensors dtype (the Rust `Dtype` enum). */
export const SAFETENSORS_DTYPE_BITS: Readonly<Record<string, number>> = {
  BOOL: 8,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  C64: 64,
  F64: 64,
  I64: 64,
  U64: 64,
};

/** The file dtypes Hearth loads as weights, and their engine names. */
export const WEIGHT_DTYPES: Readonly<Record<string, DType>> = { F32: 'f32', F16: 'f16', BF16: 'bf16' };
export const FILE_DTYPE: Readonly<Record<FloatDType, string>> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };

/** A malformed or unusable safetensors file; the message starts with the file name. */
export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

/** One tensor of a file: dtype as written in the file, offsets absolute from the start of the file. */
export interface SafetensorsEntry {
  name: string;
  dtype: string;
  shape: number[];
  /** Absolute byte range [begin, end) in the file. */
  begin: number;
  end: number;
}

/** Where the bytes come from: anything that can hand out a byte range on demand. */
export interface ByteSource {
  readonly size: number;
  read(begin: number, end: number): Promise<Uint8Array>;
}

/** A Blob read slice by slice; only the requested range is ever materialised. */
export function blobBytes(blob: Blob): ByteSource {
  return {
    size: blob.size,
    read: async (begin, end) => new Uint8Array(await blob.slice(begin, end).arrayBuffer()),
  };
}

/** Bytes already in memory; reads are views, not copies. */
export function memoryBytes(bytes: Uint8Array | ArrayBuffer): ByteSource {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return { size: view.byteLength, read: async (begin, end) => view.subarray(begin, end) };
}

export interface ParsedHeader {
  /** Entries sorted by offset (file order). */
  entries: SafetensorsEntry[];
  metadata: Record<string, string>;
  /** Offset of the data buffer in the file: 8 + N. */
  dataStart: number;
}

/**
 * Validates a header the way the Rust reader does. `headerBytes` are the N bytes after the length
 * prefix, `fileSize` the whole file's length.
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array, fileSize: number, file: string): ParsedHeader {
  const corrupt = (why: string): never => {
    throw new SafetensorsError(`${file}: corrupt header: ${why}`);
  };
  const dataStart = 8 + headerBytes.byteLength;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    return corrupt('the header is not valid UTF-8');
  }
  if (!text.startsWith('{')) corrupt('the header does not start with "{"');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return corrupt(`the header is not valid JSON (${(e as Error).message})`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) corrupt('the header is not a JSON object');

  const metadata: Record<string, string> = {};
  const entries: SafetensorsEntry[] = [];
  for (const [name, info] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (info === null) continue;
      if (typeof info !== 'object' || Array.isArray(info)) corrupt('"__metadata__" must be an object of strings');
      for (const [k, v] of Object.entries(info as Record<string, unknown>)) {
        if (typeof v !== 'string') corrupt(`"__metadata__"."${k}" must be a string`);
        metadata[k] = v as string;
      }
      continue;
    }
    entries.push(parseEntry(name, info, dataStart, corrupt));
  }

  // Rust sorts by offsets, then requires them to tile the buffer from 0.
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = dataStart;
  for (const e of entries) {
    if (e.begin !== cursor) {
      corrupt(
        e.begin > cursor
          ? `tensor "${e.name}" starts at ${e.begin - dataStart}, leaving a gap after ${cursor - dataStart}`
          : `tensor "${e.name}" starts at ${e.begin - dataStart}, overlapping the previous tensor that ends at ${cursor - dataStart}`,
      );
    }
    cursor = e.end;
  }
  if (cursor !== fileSize) {
    corrupt(
      cursor > fileSize
        ? `tensors need ${cursor - dataStart} bytes of data but the file holds ${fileSize - dataStart} (truncated file?)`
        : `the file has ${fileSize - cursor} bytes after the last tensor`,
    );
  }
  return { entries, metadata, dataStart };
}

function parseEntry(name: string, info: unknown, dataStart: number, corrupt: (why: string) => never): SafetensorsEntry {
  if (info === null || typeof info !== 'object' || Array.isArray(info)) corrupt(`tensor "${name}" is not an object`);
  const { dtype, shape, data_offsets: offsets } = info as Record<string, unknown>;
  if (typeof dtype !== 'string' || !(dtype in SAFETENSORS_DTYPE_BITS)) {
    corrupt(`tensor "${name}" has unknown dtype ${JSON.stringify(dtype)}`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    corrupt(`tensor "${name}" has an invalid shape ${JSON.stringify(shape)}`);
  }
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
    offsets[1] < offsets[0]
  ) {
    corrupt(`tensor "${name}" has invalid data_offsets ${JSON.stringify(offsets)}`);
  }
  const dims = shape as number[];
  const [begin, end] = offsets as number[];
  const bits = dims.reduce((a, d) => a * d, 1) * SAFETENSORS_DTYPE_BITS[dtype];
  if (!Number.isSafeInteger(bits)) corrupt(`tensor "${name}" is too large`);
  if (bits % 8 !== 0) corrupt(`tensor "${name}" does not fill whole bytes (${bits} bits of ${dtype})`);
  if (end - begin !== bits / 8) {
    corrupt(
      `tensor "${name}" of dtype ${dtype} and shape [${dims.join(', ')}] needs ${bits / 8} bytes but data_offsets span ${end - begin}`,
    );
  }
  return { name, dtype: dtype, shape: dims, begin: dataStart + begin, end: dataStart + end };
}

/** An opened safetensors file: the validated header, and tensors read on demand. */
export class SafetensorsFile {
  private constructor(
    readonly file: string,
    private readonly bytes: ByteSource,
    readonly entries: ReadonlyMap<string, SafetensorsEntry>,
    readonly metadata: Readonly<Record<string, string>>,
  ) {}

  /** Reads and validates only the header: 8 bytes, then N bytes. */
  static async open(source: Blob | ByteSource | Uint8Array | ArrayBuffer, file = 'model.safetensors'): Promise<SafetensorsFile> {
    const bytes =
      source instanceof Blob
        ? blobBytes(source)
        : source instanceof Uint8Array || source instanceof ArrayBuffer
          ? memoryBytes(source)
          : source;
    if (bytes.size < 8)
      throw new SafetensorsError(`${file}: corrupt header: the file is ${bytes.size} bytes, shorter than the 8-byte header length`);
    const prefix = await bytes.read(0, 8);
    const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
    if (n > BigInt(MAX_HEADER_SIZE)) {
      throw new SafetensorsError(`${file}: corrupt header: header length ${n} exceeds the ${MAX_HEADER_SIZE}-byte limit`);
    }
    const headerLength = Number(n);
    if (8 + headerLength > bytes.size) {
      throw new SafetensorsError(`${file}: corrupt header: header length ${headerLength} runs past the end of the ${bytes.size}-byte file`);
    }
    const header = parseSafetensorsHeader(await bytes.read(8, 8 + headerLength), bytes.size, file);
    return new SafetensorsFile(file, bytes, new Map(header.entries.map((e) => [e.name, e])), header.metadata);
  }

  /** Names in file order. */
  get names(): string[] {
    return [...this.entries.keys()];
  }

  entry(name: string): SafetensorsEntry {
    const e = this.entries.get(name);
    if (!e) throw new SafetensorsError(`${this.file}: no tensor named "${name}"`);
    return e;
  }

  /** Reads one tensor as weight data; refuses dtypes other than F32, F16, BF16. */
  async read(name: string): Promise<TensorData> {
    const e = this.entry(name);
    const dtype = WEIGHT_DTYPES[e.dtype];
    if (!dtype) {
      throw new SafetensorsError(`${this.file}: tensor "${name}" has dtype ${e.dtype}; Hearth loads weights only as F32, F16 or BF16`);
    }
    const data = await this.bytes.read(e.begin, e.end);
    return { name, dtype, shape: [...e.shape], data };
  }

  /** Reads the named tensors (default: all) one at a time, in file order so a disk or cache reads forward. */
  async *tensors(names?: Iterable<string>): AsyncGenerator<TensorData> {
    const wanted = names ? [...names].map((n) => this.entry(n)) : [...this.entries.values()];
    wanted.sort((a, b) => a.begin - b.begin);
    for (const e of wanted) yield await this.read(e.name);
  }
}
