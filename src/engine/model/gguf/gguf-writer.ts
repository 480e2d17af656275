/**
 * GGUF writer (version 3 by default): metadata pairs with explicit value types, then the tensor
 * table, then the aligned data section. Used by tests and model making to produce files llama.cpp
 * and Hearth both read, and by adapter export. Layout: see gguf-reader.ts.
 *
 * Not here: quantizing (tensors arrive as ready blocks), reading.
 */
import { ggmlBytes, ggmlType } from '../../tensor/ggml-types';
import { GGUF_SCALARS, GgufValueType, type GgufMetadataEntry } from './gguf-reader';

export interface GgufTensorInput {
  name: string;
  /** ggml order: ne[0] is the innermost (row) length. */
  ne: number[];
  /** GGML type name (F32, Q4_K, ...). */
  type: string;
  /** The tensor's blocks, exactly as stored. */
  data: Uint8Array;
}

export interface GgufInput {
  version?: 2 | 3;
  /** Written in this order; `general.alignment` (u32), when present, sets the data alignment. */
  metadata: ReadonlyArray<[string, GgufMetadataEntry]>;
  tensors: readonly GgufTensorInput[];
}

/** Convenience constructors for metadata entries. */
export const gv = {
  u32: (value: number): GgufMetadataEntry => ({ type: GgufValueType.UINT32, value }),
  i32: (value: number): GgufMetadataEntry => ({ type: GgufValueType.INT32, value }),
  f32: (value: number): GgufMetadataEntry => ({ type: GgufValueType.FLOAT32, value }),
  bool: (value: boolean): GgufMetadataEntry => ({ type: GgufValueType.BOOL, value }),
  str: (value: string): GgufMetadataEntry => ({ type: GgufValueType.STRING, value }),
  strs: (value: string[]): GgufMetadataEntry => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value }),
  f32s: (value: number[] | Float32Array): GgufMetadataEntry => ({
    type: GgufValueType.ARRAY,
    itemType: GgufValueType.FLOAT32,
    value: Float32Array.from(value),
  }),
  i32s: (value: number[] | Int32Array): GgufMetadataEntry => ({
    type: GgufValueType.ARRAY,
    itemType: GgufValueType.INT32,
    value: Int32Array.from(value),
  }),
};

/** Little-endian DataView writes of the fixed-size scalar types, from the value as the caller gave it. */
const SETTERS: Partial<Record<number, (d: DataView, at: number, v: unknown) => void>> = {
  [GgufValueType.UINT8]: (d, at, v) => d.setUint8(at, Number(v)),
  [GgufValueType.INT8]: (d, at, v) => d.setInt8(at, Number(v)),
  [GgufValueType.BOOL]: (d, at, v) => d.setUint8(at, v ? 1 : 0),
  [GgufValueType.UINT16]: (d, at, v) => d.setUint16(at, Number(v), true),
  [GgufValueType.INT16]: (d, at, v) => d.setInt16(at, Number(v), true),
  [GgufValueType.UINT32]: (d, at, v) => d.setUint32(at, Number(v), true),
  [GgufValueType.INT32]: (d, at, v) => d.setInt32(at, Number(v), true),
  [GgufValueType.FLOAT32]: (d, at, v) => d.setFloat32(at, Number(v), true),
  [GgufValueType.UINT64]: (d, at, v) => d.setBigUint64(at, BigInt(v as number | bigint), true),
  [GgufValueType.INT64]: (d, at, v) => d.setBigInt64(at, BigInt(v as number | bigint), true),
  [GgufValueType.FLOAT64]: (d, at, v) => d.setFloat64(at, Number(v), true),
};

/** A growing byte buffer (one DataView, doubled when full: a vocabulary is ~10^6 small writes). */
class Sink {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  size = 0;
  private readonly enc = new TextEncoder();

  private reserve(n: number): number {
    if (this.size + n > this.buf.length) {
      const grown = new Uint8Array(Math.max(this.buf.length * 2, this.size + n));
      grown.set(this.buf.subarray(0, this.size));
      this.buf = grown;
      this.view = new DataView(grown.buffer);
    }
    const at = this.size;
    this.size += n;
    return at;
  }
  // Each write reserves first: reserving may replace buf and view.
  bytes(b: Uint8Array): void {
    const at = this.reserve(b.length);
    this.buf.set(b, at);
  }
  /** One scalar of a fixed-size type (its size from gguf-reader.ts GGUF_SCALARS), little-endian. */
  scalar(type: GgufValueType, v: unknown): void {
    const Typed = GGUF_SCALARS[type];
    const set = SETTERS[type];
    if (!Typed || !set) throw new Error(`gguf writer: value type ${type} is not a scalar`);
    const at = this.reserve(Typed.BYTES_PER_ELEMENT); // first: reserving may replace the view
    set(this.view, at, v);
  }
  u32(v: number): void {
    this.scalar(GgufValueType.UINT32, v);
  }
  u64(v: number | bigint): void {
    this.scalar(GgufValueType.UINT64, v);
  }
  string(s: string): void {
    const b = this.enc.encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  pad(alignment: number): void {
    const n = (alignment - (this.size % alignment)) % alignment;
    if (n) {
      const at = this.reserve(n);
      this.buf.fill(0, at, this.size);
    }
  }
  concat(): Uint8Array {
    return this.buf.slice(0, this.size);
  }
}

function writeScalar(s: Sink, type: GgufValueType, v: unknown): void {
  if (type === GgufValueType.STRING) s.string(String(v));
  else s.scalar(type, v);
}

function writeValue(s: Sink, e: GgufMetadataEntry): void {
  if (e.type !== GgufValueType.ARRAY) return writeScalar(s, e.type, e.value);
  const items = Array.from(e.value as ArrayLike<unknown>);
  s.u32(e.itemType!);
  s.u64(items.length);
  for (const item of items) {
    if (e.itemType === GgufValueType.ARRAY) throw new Error('gguf writer: nested arrays are not written');
    writeScalar(s, e.itemType!, item);
  }
}

/** A tensor of a header written apart from its data: where its blocks sit in the data section. */
export interface GgufTensorEntry {
  name: string;
  /** ggml order: ne[0] is the innermost (row) length. */
  ne: number[];
  /** GGML type name (F32, Q4_K, ...). */
  type: string;
  /** Byte offset of its blocks from the start of the data section (a multiple of the alignment). */
  offset: number;
}

/**
 * The header alone (magic, metadata, tensor table), padded to the alignment so the data section
 * can follow it as it is: for a file whose tensors are reused from another one (the CPU backend
 * rewrites a GGUF's metadata and keeps its tensor bytes, engine/cpu/cpu-gguf.ts).
 */
export function writeGgufHeader(input: {
  version?: 2 | 3;
  metadata: GgufInput['metadata'];
  tensors: readonly GgufTensorEntry[];
}): Uint8Array {
  const s = new Sink();
  writeHeader(s, input.version ?? 3, input.metadata, input.tensors);
  s.pad(alignmentOf(input.metadata));
  return s.concat();
}

function alignmentOf(metadata: GgufInput['metadata']): number {
  const alignEntry = metadata.find(([k]) => k === 'general.alignment');
  return alignEntry ? Number(alignEntry[1].value) : 32;
}

function writeHeader(s: Sink, version: number, metadata: GgufInput['metadata'], tensors: readonly GgufTensorEntry[]): void {
  s.u32(0x46554747);
  s.u32(version);
  s.u64(tensors.length);
  s.u64(metadata.length);
  for (const [key, entry] of metadata) {
    s.string(key);
    s.u32(entry.type);
    writeValue(s, entry);
  }
  for (const t of tensors) {
    s.string(t.name);
    s.u32(t.ne.length);
    for (const n of t.ne) s.u64(n);
    s.u32(ggmlType(t.type).id);
    s.u64(t.offset);
  }
}

/** The data-section layout of `tensors`: each one's offset, each padded to the alignment. */
export function ggufLayout(
  tensors: readonly Omit<GgufTensorInput, 'data'>[],
  alignment: number,
  sizes: readonly number[],
): GgufTensorEntry[] {
  let offset = 0;
  return tensors.map((t, i) => {
    const entry = { name: t.name, ne: t.ne, type: t.type, offset };
    offset += Math.ceil(sizes[i] / alignment) * alignment;
    return entry;
  });
}

/** Serialises a GGUF file; each tensor's data must be exactly its blocks. */
export function writeGguf(input: GgufInput): Uint8Array {
  const alignment = alignmentOf(input.metadata);
  const sizes = input.tensors.map((t) => {
    const bytes = ggmlBytes(
      ggmlType(t.type),
      t.ne.reduce((a, b) => a * b, 1),
    );
    if (t.data.length !== bytes) throw new Error(`gguf writer: tensor ${t.name} has ${t.data.length} bytes, ${t.type} needs ${bytes}`);
    return bytes;
  });
  const s = new Sink();
  writeHeader(s, input.version ?? 3, input.metadata, ggufLayout(input.tensors, alignment, sizes));
  s.pad(alignment);
  for (const t of input.tensors) {
    s.bytes(t.data);
    s.pad(alignment);
  }
  return s.concat();
}
