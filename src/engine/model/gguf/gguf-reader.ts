/**
 * GGUF reader (versions 2 and 3): the header, the metadata key-value pairs and the tensor table are
 * parsed and validated up front; tensor data is read lazily, one tensor at a time, from a
 * ByteSource (a File, a cached blob, `fs.openAsBlob` in Node), so a model file is never held twice.
 *
 * Layout (ggml/docs/gguf.md; ggml/src/gguf.cpp `gguf_init_from_file_impl`): "GGUF", u32 version,
 * u64 tensor count, u64 metadata count; each pair is a string key, a u32 value type and the value
 * (strings are u64 length + UTF-8; arrays are u32 item type + u64 count + items); each tensor is a
 * string name, u32 n_dims, n_dims x u64 ne (ne[0] varies fastest), u32 ggml type, u64 offset
 * relative to the data section; the data section starts at the next multiple of
 * `general.alignment` (default 32) after the tensor table.
 *
 * Untrusted input: every count, length and size is capped before anything is allocated, offsets
 * must be aligned, in bounds and non-overlapping, and each row must be whole blocks. Failures are
 * GgufError with the file name and what is wrong. Not here: what the metadata means for a model
 * (a later loader), the block formats (model/quant/dequant.ts).
 */
import type { ByteSource } from '../files/safetensors';
import { GGML_TYPES, SUPPORTED_GGML_TYPES, type GgmlType } from '../../tensor/ggml-types';

export const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
/** Caps on what a header may claim, far above any real model (Gemma 3's 262k vocabulary included). */
export const GGUF_LIMITS = {
  tensors: 65_536,
  metadataPairs: 65_536,
  stringBytes: 16 << 20,
  arrayItems: 16 << 20,
  /** The header, metadata and tensor table together. */
  headerBytes: 256 << 20,
  dims: 4,
} as const;

/** Strings as written: a leading U+FEFF is a character of the string (Gemma's vocabulary has
 *  "\uFEFF//" beside "//"), not a byte-order mark to drop, as TextDecoder does by default. */
const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export class GgufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufError';
  }
}

/** Metadata value types (gguf.h `enum gguf_type`). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GgufValueType)[keyof typeof GgufValueType];

/** A metadata value: scalars as number / bigint (64-bit integers beyond 2^53) / boolean / string;
 *  numeric arrays as typed arrays, string arrays as string[], nested arrays as arrays of those. */
export type GgufValue = number | bigint | boolean | string | GgufArray;
export type GgufArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | boolean[]
  | string[]
  | GgufArray[];

export interface GgufMetadataEntry {
  type: GgufValueType;
  /** Item type of an array value. */
  itemType?: GgufValueType;
  value: GgufValue;
}

export interface GgufTensorInfo {
  name: string;
  /** ggml order: ne[0] is the innermost (row) length. */
  ne: number[];
  type: GgmlType;
  elements: number;
  /** Absolute byte range [begin, end) in the file. */
  begin: number;
  end: number;
}

export interface GgufFile {
  version: number;
  alignment: number;
  metadata: ReadonlyMap<string, GgufMetadataEntry>;
  tensors: readonly GgufTensorInfo[];
  /** Absolute offset of the data section. */
  dataOffset: number;
}

type ScalarArrayType =
  | Uint8ArrayConstructor
  | Int8ArrayConstructor
  | Uint16ArrayConstructor
  | Int16ArrayConstructor
  | Uint32ArrayConstructor
  | Int32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | BigUint64ArrayConstructor
  | BigInt64ArrayConstructor;

/**
 * The fixed-size scalar types: the typed array that holds them (its BYTES_PER_ELEMENT is the size;
 * GGUF is little-endian like every host WebGPU runs on). BOOL is a byte. Shared with the writer.
 */
export const GGUF_SCALARS: Partial<Record<number, ScalarArrayType>> = {
  [GgufValueType.UINT8]: Uint8Array,
  [GgufValueType.INT8]: Int8Array,
  [GgufValueType.BOOL]: Uint8Array,
  [GgufValueType.UINT16]: Uint16Array,
  [GgufValueType.INT16]: Int16Array,
  [GgufValueType.UINT32]: Uint32Array,
  [GgufValueType.INT32]: Int32Array,
  [GgufValueType.FLOAT32]: Float32Array,
  [GgufValueType.UINT64]: BigUint64Array,
  [GgufValueType.INT64]: BigInt64Array,
  [GgufValueType.FLOAT64]: Float64Array,
};

/** Reads forward through the source, fetching more bytes as needed (never past the header cap). */
class Cursor {
  private buf: Uint8Array = new Uint8Array(0);
  private view: DataView = new DataView(this.buf.buffer);
  private start = 0; // file offset of buf[0]
  pos = 0; // file offset of the next byte

  constructor(
    private readonly src: ByteSource,
    private readonly file: string,
  ) {}

  async need(n: number): Promise<void> {
    const end = this.pos + n;
    if (end > this.src.size) throw new GgufError(`${this.file}: truncated (needs ${end} bytes, the file has ${this.src.size})`);
    if (end > GGUF_LIMITS.headerBytes) throw new GgufError(`${this.file}: header and metadata exceed ${GGUF_LIMITS.headerBytes} bytes`);
    if (end <= this.start + this.buf.length) return;
    // Read at least 1 MiB ahead, so a metadata table of many small values costs few reads.
    const readEnd = Math.min(this.src.size, Math.max(end, this.pos + (1 << 20)), GGUF_LIMITS.headerBytes);
    const more = await this.src.read(this.pos, readEnd);
    this.buf = more;
    this.view = new DataView(more.buffer, more.byteOffset, more.byteLength);
    this.start = this.pos;
  }

  private at(): number {
    return this.pos - this.start;
  }

  async u32(): Promise<number> {
    await this.need(4);
    const v = this.view.getUint32(this.at(), true);
    this.pos += 4;
    return v;
  }

  /** A u64 that must fit a JS number (counts, lengths, offsets, dims). */
  async u64(what: string): Promise<number> {
    await this.need(8);
    const v = this.view.getBigUint64(this.at(), true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`${this.file}: ${what} ${v} is too large`);
    return Number(v);
  }

  async string(what: string): Promise<string> {
    const n = await this.u64(`${what} length`);
    if (n > GGUF_LIMITS.stringBytes) throw new GgufError(`${this.file}: ${what} is ${n} bytes (at most ${GGUF_LIMITS.stringBytes})`);
    await this.need(n);
    const s = UTF8.decode(this.buf.subarray(this.at(), this.at() + n));
    this.pos += n;
    return s;
  }

  /** `count` fixed-size scalars copied out as a typed array. */
  async scalars(type: GgufValueType, count: number): Promise<GgufArray> {
    const Typed = GGUF_SCALARS[type]!;
    const size = Typed.BYTES_PER_ELEMENT;
    await this.need(size * count);
    const bytes = this.buf.slice(this.at(), this.at() + size * count);
    this.pos += size * count;
    if (type === GgufValueType.BOOL) return Array.from(bytes, (b) => b !== 0);
    return type === GgufValueType.UINT8 ? bytes : new Typed(bytes.buffer);
  }
}

function scalarOf(arr: GgufArray): number | bigint | boolean {
  const v = (arr as ArrayLike<number | bigint | boolean>)[0];
  if (typeof v === 'bigint' && v >= -BigInt(Number.MAX_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  return v;
}

async function readValue(c: Cursor, type: GgufValueType, key: string, file: string, depth: number): Promise<GgufMetadataEntry> {
  if (type === GgufValueType.STRING) return { type, value: await c.string(`value of ${key}`) };
  if (GGUF_SCALARS[type] !== undefined) return { type, value: scalarOf(await c.scalars(type, 1)) };
  if (type !== GgufValueType.ARRAY) throw new GgufError(`${file}: metadata ${key} has unknown value type ${type}`);
  if (depth > 2) throw new GgufError(`${file}: metadata ${key} nests arrays more than 2 deep`);
  const itemType = (await c.u32()) as GgufValueType;
  const count = await c.u64(`${key} array length`);
  if (count > GGUF_LIMITS.arrayItems)
    throw new GgufError(`${file}: metadata ${key} has ${count} items (at most ${GGUF_LIMITS.arrayItems})`);
  if (GGUF_SCALARS[itemType] !== undefined) return { type, itemType, value: await c.scalars(itemType, count) };
  const items: GgufValue[] = [];
  for (let i = 0; i < count; i++) items.push((await readValue(c, itemType, `${key}[${i}]`, file, depth + 1)).value);
  if (itemType !== GgufValueType.STRING && itemType !== GgufValueType.ARRAY) {
    throw new GgufError(`${file}: metadata ${key} has unknown item type ${itemType}`);
  }
  return { type, itemType, value: items as string[] | GgufArray[] };
}

/** Parses and validates a GGUF file's header, metadata and tensor table (no tensor data is read). */
export async function readGguf(src: ByteSource, file = 'model.gguf'): Promise<GgufFile> {
  const c = new Cursor(src, file);
  if ((await c.u32()) !== GGUF_MAGIC) throw new GgufError(`${file}: not a GGUF file (bad magic)`);
  const version = await c.u32();
  if (version !== 2 && version !== 3) throw new GgufError(`${file}: GGUF version ${version} is not supported (2 and 3 are)`);
  const tensorCount = await c.u64('tensor count');
  const pairCount = await c.u64('metadata count');
  if (tensorCount > GGUF_LIMITS.tensors) throw new GgufError(`${file}: ${tensorCount} tensors (at most ${GGUF_LIMITS.tensors})`);
  if (pairCount > GGUF_LIMITS.metadataPairs)
    throw new GgufError(`${file}: ${pairCount} metadata pairs (at most ${GGUF_LIMITS.metadataPairs})`);

  const metadata = new Map<string, GgufMetadataEntry>();
  for (let i = 0; i < pairCount; i++) {
    const key = await c.string('metadata key');
    if (metadata.has(key)) throw new GgufError(`${file}: metadata key ${key} appears twice`);
    metadata.set(key, await readValue(c, (await c.u32()) as GgufValueType, key, file, 0));
  }

  const alignment = alignmentOf(metadata, file);
  const raw: Array<{ name: string; ne: number[]; type: GgmlType; offset: number }> = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = await c.string('tensor name');
    if (names.has(name)) throw new GgufError(`${file}: tensor ${name} appears twice`);
    names.add(name);
    const nDims = await c.u32();
    if (nDims < 1 || nDims > GGUF_LIMITS.dims)
      throw new GgufError(`${file}: tensor ${name} has ${nDims} dimensions (1 to ${GGUF_LIMITS.dims})`);
    const ne: number[] = [];
    for (let d = 0; d < nDims; d++) ne.push(await c.u64(`tensor ${name} dimension ${d}`));
    const typeId = await c.u32();
    const type = GGML_TYPES.get(typeId);
    if (!type) throw new GgufError(`${file}: tensor ${name} has unknown GGML type ${typeId}`);
    if (!SUPPORTED_GGML_TYPES.has(type.name)) {
      throw new GgufError(
        `${file}: tensor ${name} has type ${type.name}, which Hearth does not read (supported: ${[...SUPPORTED_GGML_TYPES].join(', ')})`,
      );
    }
    raw.push({ name, ne, type, offset: await c.u64(`tensor ${name} offset`) });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  const tensors = raw.map((t) => placeTensor(t, dataOffset, alignment, src.size, file));
  checkNoOverlap(tensors, file);
  return { version, alignment, metadata, tensors, dataOffset };
}

function alignmentOf(metadata: ReadonlyMap<string, GgufMetadataEntry>, file: string): number {
  const entry = metadata.get('general.alignment');
  if (!entry) return 32;
  const a = entry.value;
  if (entry.type !== GgufValueType.UINT32 || typeof a !== 'number' || a === 0 || (a & (a - 1)) !== 0) {
    throw new GgufError(`${file}: general.alignment must be a power of two u32 (got ${String(a)})`);
  }
  return a;
}

function placeTensor(
  t: { name: string; ne: number[]; type: GgmlType; offset: number },
  dataOffset: number,
  alignment: number,
  fileSize: number,
  file: string,
): GgufTensorInfo {
  if (t.ne.some((n) => n < 1)) throw new GgufError(`${file}: tensor ${t.name} has an empty dimension [${t.ne.join(', ')}]`);
  const elements = t.ne.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(elements)) throw new GgufError(`${file}: tensor ${t.name} is too large`);
  if (t.ne[0] % t.type.blockSize !== 0) {
    throw new GgufError(
      `${file}: tensor ${t.name} (${t.type.name}) has rows of ${t.ne[0]} elements, not whole blocks of ${t.type.blockSize}`,
    );
  }
  if (t.offset % alignment !== 0)
    throw new GgufError(`${file}: tensor ${t.name} offset ${t.offset} is not a multiple of the alignment ${alignment}`);
  const begin = dataOffset + t.offset;
  const end = begin + (elements / t.type.blockSize) * t.type.typeSize;
  if (end > fileSize) throw new GgufError(`${file}: tensor ${t.name} ends at byte ${end}, past the end of the file (${fileSize})`);
  return { name: t.name, ne: t.ne, type: t.type, elements, begin, end };
}

function checkNoOverlap(tensors: readonly GgufTensorInfo[], file: string): void {
  const sorted = [...tensors].sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) throw new GgufError(`${file}: tensors ${sorted[i - 1].name} and ${sorted[i].name} overlap`);
  }
}

/** The bytes of one tensor (its blocks, as stored). */
export function readGgufTensor(src: ByteSource, t: GgufTensorInfo): Promise<Uint8Array> {
  return src.read(t.begin, t.end);
}

/** A metadata value by key, or undefined. */
export function ggufValue(file: GgufFile, key: string): GgufValue | undefined {
  return file.metadata.get(key)?.value;
}
