// GGUF reader: what the writer writes reads back exactly (every metadata value type, every tensor
// type Hearth reads), and every malformed or hostile header is refused with a message naming what is
// wrong, before anything large is allocated.
import { describe, expect, it } from 'vitest';
import { ggmlBytes, ggmlType, SUPPORTED_GGML_TYPES } from '../../../src/engine/tensor/ggml-types';
import { GgufValueType, readGguf, readGgufTensor, type GgufMetadataEntry } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes as source } from '../../../src/engine/model/files/safetensors';
import { Rng } from '../../../src/engine/tensor/random';
import { randomBlocks } from '../../../src/engine/reference/random-blocks';

const read = (bytes: Uint8Array) => readGguf(source(bytes), 'x.gguf');

function tensor(name: string, type: string, ne: number[], seed = 1): GgufTensorInput {
  return {
    name,
    ne,
    type,
    data: randomBlocks(
      type,
      ne.reduce((a, b) => a * b, 1),
      1,
      new Rng(seed),
    ),
  };
}

/** Byte offset of the u64 `offset` field of tensor `name` in a file the writer made. */
function offsetField(bytes: Uint8Array, name: string, nDims: number): number {
  const needle = new TextEncoder().encode(name);
  for (let i = 0; i < bytes.length; i++) {
    if (needle.every((b, k) => bytes[i + k] === b)) return i + needle.length + 4 + 8 * nDims + 4;
  }
  throw new Error(`no tensor ${name}`);
}

function setU64(bytes: Uint8Array, at: number, v: number | bigint): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setBigUint64(at, BigInt(v), true);
  return out;
}

const base = () =>
  writeGguf({ metadata: [['general.architecture', gv.str('qwen3')]], tensors: [tensor('a', 'F32', [8]), tensor('b', 'Q4_K', [256, 2])] });

describe('GGUF reader', () => {
  it('reads back every metadata value type the writer writes', async () => {
    const metadata: Array<[string, GgufMetadataEntry]> = [
      ['u8', { type: GgufValueType.UINT8, value: 200 }],
      ['i8', { type: GgufValueType.INT8, value: -5 }],
      ['u16', { type: GgufValueType.UINT16, value: 60000 }],
      ['i16', { type: GgufValueType.INT16, value: -300 }],
      ['u32', gv.u32(4_000_000_000)],
      ['i32', gv.i32(-7)],
      ['f32', gv.f32(0.5)],
      ['f64', { type: GgufValueType.FLOAT64, value: 1e-300 }],
      ['u64', { type: GgufValueType.UINT64, value: 2n ** 60n }],
      ['i64', { type: GgufValueType.INT64, value: -3 }],
      ['bool', gv.bool(true)],
      ['str', gv.str('héllo {{ x }}')],
      ['strs', gv.strs(['a', 'Ġb', ''])],
      ['f32s', gv.f32s([1, -2.5])],
      ['i32s', gv.i32s([3, -4])],
    ];
    const file = await read(writeGguf({ metadata, tensors: [] }));
    const v = (k: string) => file.metadata.get(k)!.value;
    expect([v('u8'), v('i8'), v('u16'), v('i16'), v('u32'), v('i32'), v('f32'), v('f64')]).toEqual([
      200, -5, 60000, -300, 4_000_000_000, -7, 0.5, 1e-300,
    ]);
    expect(v('u64')).toBe(2n ** 60n); // beyond 2^53: kept exact as a bigint
    expect(v('i64')).toBe(-3);
    expect(v('bool')).toBe(true);
    expect(v('str')).toBe('héllo {{ x }}');
    expect(v('strs')).toEqual(['a', 'Ġb', '']);
    expect(Array.from(v('f32s') as Float32Array)).toEqual([1, -2.5]);
    expect(Array.from(v('i32s') as Int32Array)).toEqual([3, -4]);
    expect(file.metadata.get('strs')!.itemType).toBe(GgufValueType.STRING);
  });

  it('keeps a leading U+FEFF in strings (Gemma has both "//" and "\\uFEFF//" as tokens)', async () => {
    const file = await readGguf(source(writeGguf({ metadata: [['tokens', gv.strs(['//', '\uFEFF//'])]], tensors: [] })));
    expect(file.metadata.get('tokens')!.value).toEqual(['//', '\uFEFF//']);
  });

  it('reads back the blocks of every supported tensor type at aligned offsets', async () => {
    const types = [...SUPPORTED_GGML_TYPES];
    const tensors = types.map((t, i) => tensor(`t.${t}`, t, [ggmlType(t).blockSize === 1 ? 3 : 256, 2], i));
    for (const version of [2, 3] as const) {
      for (const alignment of [32, 64]) {
        const bytes = writeGguf({ version, metadata: [['general.alignment', gv.u32(alignment)]], tensors });
        const file = await read(bytes);
        expect(file.version).toBe(version);
        expect(file.alignment).toBe(alignment);
        expect(file.dataOffset % alignment).toBe(0);
        for (const [i, t] of file.tensors.entries()) {
          expect(t.name).toBe(tensors[i].name);
          expect(t.type.name).toBe(tensors[i].type);
          expect(t.ne).toEqual(tensors[i].ne);
          expect(t.begin % alignment).toBe(0);
          expect(t.end - t.begin).toBe(ggmlBytes(t.type, t.elements));
          expect(await readGgufTensor(source(bytes), t)).toEqual(tensors[i].data);
        }
      }
    }
  });

  it('refuses files that are not GGUF 2 or 3', async () => {
    const b = base();
    const patched = (at: number, v: number) => {
      const out = b.slice();
      new DataView(out.buffer).setUint32(at, v, true);
      return out;
    };
    await expect(read(patched(0, 0x46554746))).rejects.toThrow('x.gguf: not a GGUF file (bad magic)');
    await expect(read(patched(4, 1))).rejects.toThrow('GGUF version 1 is not supported');
    await expect(read(patched(4, 4))).rejects.toThrow('GGUF version 4 is not supported');
    await expect(read(b.slice(0, 40))).rejects.toThrow('truncated');
  });

  it('refuses hostile counts and lengths before allocating for them', async () => {
    const b = base();
    await expect(read(setU64(b, 8, 1e9))).rejects.toThrow('1000000000 tensors (at most 65536)');
    await expect(read(setU64(b, 16, 2n ** 62n))).rejects.toThrow('metadata count 4611686018427387904 is too large');
    await expect(read(setU64(b, 24, 1 << 30))).rejects.toThrow('metadata key is 1073741824 bytes');
    const arr = writeGguf({ metadata: [['k', gv.i32s([1, 2])]], tensors: [] });
    // The array count sits after the key (8 + 1 bytes), the value type and the item type.
    await expect(read(setU64(arr, 24 + 9 + 4 + 4, 1e9))).rejects.toThrow('metadata k has 1000000000 items');
    await expect(read(setU64(arr, 24 + 9 + 4 + 4, 1000))).rejects.toThrow('truncated');
  });

  it('refuses tensors that are misplaced, overlapping or not whole blocks', async () => {
    const b = base();
    const bField = offsetField(b, 'b', 2);
    await expect(read(setU64(b, bField, 8))).rejects.toThrow('tensor b offset 8 is not a multiple of the alignment 32');
    await expect(read(setU64(b, bField, 0))).rejects.toThrow('tensors a and b overlap');
    await expect(read(setU64(b, bField, 32 * 1000))).rejects.toThrow(/tensor b ends at byte \d+, past the end of the file/);
    const rows = writeGguf({ metadata: [], tensors: [tensor('w', 'Q8_0', [64, 1])] });
    const ne0 = offsetField(rows, 'w', 2) - 4 - 16; // ne[0] of w
    await expect(read(setU64(rows, ne0, 48))).rejects.toThrow('tensor w (Q8_0) has rows of 48 elements, not whole blocks of 32');
    await expect(read(setU64(rows, ne0, 0))).rejects.toThrow('tensor w has an empty dimension');
  });

  it('names the tensor and its type when the type is one Hearth does not read', async () => {
    const b = writeGguf({ metadata: [], tensors: [tensor('blk.0.ffn_up.weight', 'F32', [256])] });
    const typeAt = offsetField(b, 'blk.0.ffn_up.weight', 1) - 4;
    const patched = (id: number) => {
      const out = b.slice();
      new DataView(out.buffer).setUint32(typeAt, id, true);
      return out;
    };
    await expect(read(patched(16))).rejects.toThrow('tensor blk.0.ffn_up.weight has type IQ2_XXS, which Hearth does not read');
    await expect(read(patched(4))).rejects.toThrow('tensor blk.0.ffn_up.weight has unknown GGML type 4');
  });

  it('refuses duplicate keys and names, a bad alignment and too many dimensions', async () => {
    await expect(
      read(
        writeGguf({
          metadata: [
            ['k', gv.u32(1)],
            ['k', gv.u32(2)],
          ],
          tensors: [],
        }),
      ),
    ).rejects.toThrow('metadata key k appears twice');
    await expect(read(writeGguf({ metadata: [], tensors: [tensor('t', 'F32', [4]), tensor('t', 'F32', [4])] }))).rejects.toThrow(
      'tensor t appears twice',
    );
    const badAlign = writeGguf({ metadata: [['general.alignment', gv.u32(32)]], tensors: [] });
    const alignAt = 24 + 8 + 'general.alignment'.length + 4; // header, key, value type
    new DataView(badAlign.buffer).setUint32(alignAt, 48, true);
    await expect(read(badAlign)).rejects.toThrow('general.alignment must be a power of two u32 (got 48)');
    await expect(read(writeGguf({ metadata: [], tensors: [tensor('t', 'F32', [1, 1, 1, 1, 2])] }))).rejects.toThrow(
      'tensor t has 5 dimensions (1 to 4)',
    );
  });
});
