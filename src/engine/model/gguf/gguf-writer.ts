/**
 * GGUF writer (version 3 by default): metadata pairs with explicit value types, then the tensor
 * table, then the aligned data section. Used by tests and model making to produce files llama.cpp
 * and Hearth both read, and by adapter export. Layout: see gguf-reader.ts.
 *
 * Not here: quantizing (tensors arrive as ready blocks), reading.
 */
import { ggmlBytes, ggmlType } from './ggml-types';
import { GgufValueType, type GgufMetadataEntry } from './gguf-reader';

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
  u8(v: number): void {
    const at = this.reserve(1);
    this.view.setUint8(at, v);
  }
  i8(v: number): void {
    const at = this.reserve(1);
    this.view.setInt8(at, v);
  }
  u16(v: number): void {
    const at = this.reserve(2);
    this.view.setUint16(at, v, true);
  }
  i16(v: number): void {
    const at = this.reserve(2);
    this.view.setInt16(at, v, true);
  }
  u32(v: number): void {
    const at = this.reserve(4);
    this.view.setUint32(at, v, true);
  }
  i32(v: number): void {
    const at = this.reserve(4);
    this.view.setInt32(at, v, true);
  }
  f32(v: number): void {
    const at = this.reserve(4);
    this.view.setFloat32(at, v, true);
  }
  f64(v: number): void {
    const at = this.reserve(8);
    this.view.setFloat64(at, v, true);
  }
  u64(v: number | bigint): void {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  i64(v: number | bigint): void {
    const at = this.reserve(8);
    this.view.setBigInt64(at, BigInt(v), true);
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
  switch (type) {
    case GgufValueType.UINT8:
      return s.u8(Number(v));
    case GgufValueType.INT8:
      return s.i8(Number(v));
    case GgufValueType.UINT16:
      return s.u16(Number(v));
    case GgufValueType.INT16:
      return s.i16(Number(v));
    case GgufValueType.UINT32:
      return s.u32(Number(v));
    case GgufValueType.INT32:
      return s.i32(Number(v));
    case GgufValueType.FLOAT32:
      return s.f32(Number(v));
    case GgufValueType.FLOAT64:
      return s.f64(Number(v));
    case GgufValueType.BOOL:
      return s.u8(v ? 1 : 0);
    case GgufValueType.UINT64:
      return s.u64(v as number | bigint);
    case GgufValueType.INT64:
      return s.i64(v as number | bigint);
    case GgufValueType.STRING:
      return s.string(String(v));
    default:
      throw new Error(`gguf writer: value type ${type} is not a scalar`);
  }
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

/** Serialises a GGUF file; each tensor's data must be exactly its blocks. */
export function writeGguf(input: GgufInput): Uint8Array {
  const alignEntry = input.metadata.find(([k]) => k === 'general.alignment');
  const alignment = alignEntry ? Number(alignEntry[1].value) : 32;
  const s = new Sink();
  s.u32(0x46554747);
  s.u32(input.version ?? 3);
  s.u64(input.tensors.length);
  s.u64(input.metadata.length);
  for (const [key, entry] of input.metadata) {
    s.string(key);
    s.u32(entry.type);
    writeValue(s, entry);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of input.tensors) {
    const elements = t.ne.reduce((a, b) => a * b, 1);
    const bytes = ggmlBytes(ggmlType(t.type), elements);
    if (t.data.length !== bytes) throw new Error(`gguf writer: tensor ${t.name} has ${t.data.length} bytes, ${t.type} needs ${bytes}`);
    offsets.push(offset);
    offset += Math.ceil(bytes / alignment) * alignment;
    s.string(t.name);
    s.u32(t.ne.length);
    for (const n of t.ne) s.u64(n);
    s.u32(ggmlType(t.type).id);
    s.u64(offsets[offsets.length - 1]);
  }
  s.pad(alignment);
  for (const t of input.tensors) {
    s.bytes(t.data);
    s.pad(alignment);
  }
  return s.concat();
}
