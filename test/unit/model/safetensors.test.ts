// safetensors: round trips of each weight dtype with values checked bit for bit, byte-exact
// compatibility with the Rust reference writer (its own test vectors), the header validation of
// the Rust reader (each corruption kind), and lazy reading.
import { describe, expect, it } from 'vitest';
import { decodeToF32, encodeFromF32 } from '../../../src/engine/tensor/dtype';
import { SafetensorsError, SafetensorsFile, type ByteSource } from '../../../src/engine/model/files/safetensors';
import { safetensorsBlob, writeSafetensors } from '../../../src/engine/model/files/safetensors-writer';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';

const u16 = (t: TensorData) => [...new Uint16Array(t.data.slice().buffer)];
const u32 = (t: TensorData) => [...new Uint32Array(t.data.slice().buffer)];

/** A file from a header object and raw data, the way a broken writer might produce it. */
function rawFile(header: unknown, data: Uint8Array = new Uint8Array(0), headerText?: string): Uint8Array {
  const json = new TextEncoder().encode(headerText ?? JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  out.set(data, 8 + json.byteLength);
  return out;
}

describe('round trip of each weight dtype', () => {
  // Expected bit patterns worked out from IEEE 754 by hand:
  //   1.0 = 0x3f800000 (f32) = 0x3c00 (f16) = 0x3f80 (bf16); -2.5 = 0xc0200000 / 0xc100 / 0xc020;
  //   f16: 65504 = 0x7bff (largest), 2^-24 = 0x0001 (smallest subnormal), 70000 overflows to 0x7c00,
  //        0.1 = 0x2e66 (0.0999755859375);
  //   bf16: 0.1 = 0x3dcccccd truncated 0x3dcc, low half 0xcccd > 0x8000 rounds up: 0x3dcd (0.10009765625);
  //         3.140625 = 0x4049 exactly.
  const values = {
    f32: [1, -2.5, 0.1, 3.140625],
    f16: [1, -2.5, 65504, 2 ** -24, 70000, 0.1],
    bf16: [1, -2.5, 0.1, 3.140625],
  };
  const tensors: TensorData[] = [
    { name: 'w.f16', dtype: 'f16', shape: [2, 3], data: encodeFromF32(values.f16, 'f16') },
    { name: 'w.bf16', dtype: 'bf16', shape: [4], data: encodeFromF32(values.bf16, 'bf16') },
    { name: 'w.f32', dtype: 'f32', shape: [2, 2], data: encodeFromF32(values.f32, 'f32') },
  ];

  it('reads back the bits and values written, from a Blob', async () => {
    const file = await SafetensorsFile.open(safetensorsBlob(tensors, { format: 'pt' }));
    expect(file.metadata).toEqual({ format: 'pt' });
    const f32 = await file.read('w.f32');
    const f16 = await file.read('w.f16');
    const bf16 = await file.read('w.bf16');
    expect(f32).toMatchObject({ dtype: 'f32', shape: [2, 2] });
    expect(u32(f32)).toEqual([0x3f800000, 0xc0200000, 0x3dcccccd, 0x40490000]);
    expect(f16).toMatchObject({ dtype: 'f16', shape: [2, 3] });
    expect(u16(f16)).toEqual([0x3c00, 0xc100, 0x7bff, 0x0001, 0x7c00, 0x2e66]);
    expect(u16(bf16)).toEqual([0x3f80, 0xc020, 0x3dcd, 0x4049]);
    expect([...decodeToF32(f16.data, 'f16')]).toEqual([1, -2.5, 65504, 2 ** -24, Infinity, 0.0999755859375]);
    expect([...decodeToF32(bf16.data, 'bf16')]).toEqual([1, -2.5, 0.10009765625, 3.140625]);
  });

  it('orders tensors as the Rust writer does and aligns every tensor', async () => {
    const bytes = writeSafetensors(tensors);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const file = await SafetensorsFile.open(bytes);
    // Descending dtype (F32 > BF16 > F16 in the Rust enum), then by name.
    expect(file.names).toEqual(['w.f32', 'w.bf16', 'w.f16']);
    for (const name of file.names) {
      const e = file.entry(name);
      expect(e.begin % (e.dtype === 'F32' ? 4 : 2)).toBe(0);
    }
    const streamed: string[] = [];
    for await (const t of file.tensors()) streamed.push(t.name);
    expect(streamed).toEqual(['w.f32', 'w.bf16', 'w.f16']);
  });

  it('matches the Rust reference test vectors byte for byte', () => {
    // safetensors/src/tensor.rs, test_serialization: "attn.0" F32 [1,2,3] = 0..5, no metadata.
    const attn = { name: 'attn.0', dtype: 'f32' as const, shape: [1, 2, 3], data: encodeFromF32([0, 1, 2, 3, 4, 5], 'f32') };
    expect([...writeSafetensors([attn])]).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44,
      34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34,
      58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ]);
    // test_serialization_forced_alignement: a shorter name needs 7 spaces of padding.
    const attn0 = { ...attn, name: 'attn0', shape: [1, 1, 2, 3] };
    const padded = writeSafetensors([attn0]);
    expect(padded[0]).toBe(72);
    expect(Array.from(padded.slice(8 + 65, 8 + 72))).toEqual([32, 32, 32, 32, 32, 32, 32]);
    // test_empty: no tensors, then metadata only.
    expect([...writeSafetensors([])]).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32]);
    const meta = writeSafetensors([], { framework: 'pt' });
    expect(meta[0]).toBe(40);
    expect(new TextDecoder().decode(meta.slice(8))).toBe('{"__metadata__":{"framework":"pt"}}     ');
  });

  it('refuses to write inconsistent tensors', () => {
    expect(() => writeSafetensors([{ name: 'x', dtype: 'f32', shape: [3], data: new Uint8Array(8) }])).toThrow(/needs 12 bytes, got 8/);
    const t = { name: 'x', dtype: 'f32' as const, shape: [1], data: new Uint8Array(4) };
    expect(() => writeSafetensors([t, t])).toThrow(/duplicate tensor name "x"/);
  });
});

describe('corrupt headers are refused with the reason', () => {
  const f32x2 = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };
  const corrupt = async (bytes: Uint8Array, reason: RegExp) => {
    const attempt = SafetensorsFile.open(new Blob([bytes as BlobPart]), 'model.safetensors');
    await expect(attempt).rejects.toThrow(SafetensorsError);
    await expect(SafetensorsFile.open(bytes, 'model.safetensors')).rejects.toThrow(/^model\.safetensors: corrupt header: /);
    await expect(SafetensorsFile.open(bytes, 'model.safetensors')).rejects.toThrow(reason);
  };

  it('a file shorter than the length prefix', () => corrupt(new Uint8Array(5), /5 bytes, shorter than the 8-byte header length/));

  it('a header length over the 100 MB bound', async () => {
    const bytes = new Uint8Array(16);
    new DataView(bytes.buffer).setBigUint64(0, 100_000_001n, true);
    await corrupt(bytes, /exceeds the 100000000-byte limit/);
  });

  it('a header length past the end of the file', async () => {
    const bytes = rawFile({ a: f32x2 }, new Uint8Array(8));
    new DataView(bytes.buffer).setBigUint64(0, 5000n, true);
    await corrupt(bytes, /header length 5000 runs past the end/);
  });

  it('a header that is not UTF-8, not an object, or not JSON', async () => {
    const bad = rawFile(null, new Uint8Array(0), '{"a":1}');
    bad[9] = 0xff;
    await corrupt(bad, /not valid UTF-8/);
    await corrupt(rawFile(null, new Uint8Array(0), '[1, 2]   '), /does not start with "\{"/);
    await corrupt(rawFile(null, new Uint8Array(0), '{"a": '), /not valid JSON/);
  });

  it('an unknown dtype, a bad shape or bad offsets', async () => {
    await corrupt(rawFile({ a: { ...f32x2, dtype: 'F12' } }, new Uint8Array(8)), /tensor "a" has unknown dtype "F12"/);
    await corrupt(rawFile({ a: { ...f32x2, shape: [-2] } }, new Uint8Array(8)), /tensor "a" has an invalid shape/);
    await corrupt(rawFile({ a: { ...f32x2, data_offsets: [8, 0] } }, new Uint8Array(8)), /invalid data_offsets/);
  });

  it('a size that does not match dtype and shape', () =>
    corrupt(
      rawFile({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8)),
      /shape \[3\] needs 12 bytes but data_offsets span 8/,
    ));

  it('a gap between tensors, and overlapping tensors', async () => {
    await corrupt(
      rawFile({ a: f32x2, b: { dtype: 'F32', shape: [1], data_offsets: [12, 16] } }, new Uint8Array(16)),
      /tensor "b" starts at 12, leaving a gap after 8/,
    );
    await corrupt(
      rawFile({ a: f32x2, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, new Uint8Array(12)),
      /tensor "b" starts at 4, overlapping the previous tensor/,
    );
  });

  it('a truncated file and trailing bytes', async () => {
    await corrupt(rawFile({ a: f32x2 }, new Uint8Array(6)), /need 8 bytes of data but the file holds 6 \(truncated file\?\)/);
    await corrupt(rawFile({ a: f32x2 }, new Uint8Array(10)), /2 bytes after the last tensor/);
  });
});

describe('reading', () => {
  it('only F32, F16 and BF16 load as weights', async () => {
    const file = await SafetensorsFile.open(
      rawFile({ step: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8)),
      'adapter.safetensors',
    );
    expect(file.entry('step').dtype).toBe('I64');
    await expect(file.read('step')).rejects.toThrow(
      'adapter.safetensors: tensor "step" has dtype I64; Hearth loads weights only as F32, F16 or BF16',
    );
    await expect(file.read('nope')).rejects.toThrow('adapter.safetensors: no tensor named "nope"');
  });

  it('reads the header and then one tensor at a time, never the whole file', async () => {
    const big: TensorData[] = ['a', 'b', 'c'].map((name) => ({
      name,
      dtype: 'f32',
      shape: [1000],
      data: encodeFromF32(new Float32Array(1000).fill(name.charCodeAt(0)), 'f32'),
    }));
    const bytes = writeSafetensors(big);
    const reads: Array<[number, number]> = [];
    const source: ByteSource = {
      size: bytes.byteLength,
      read: async (b, e) => {
        reads.push([b, e]);
        return bytes.slice(b, e);
      },
    };
    const file = await SafetensorsFile.open(source);
    const headerEnd = file.entry('a').begin;
    expect(reads).toEqual([
      [0, 8],
      [8, headerEnd],
    ]);
    const b = await file.read('b');
    expect(decodeToF32(b.data, 'f32')[999]).toBe('b'.charCodeAt(0));
    expect(reads[2]).toEqual([file.entry('b').begin, file.entry('b').end]);
    expect(reads[2][1] - reads[2][0]).toBe(4000);
  });
});
