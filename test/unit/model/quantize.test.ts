// The quantizers of quantize-on-load (src/engine/model/quant/quantize.ts) against the reference
// dequantizers (src/engine/model/quant/dequant.ts, ggml's dequantize_row_* to the bit): the bytes of a
// hand-made block sit where ggml's block structs put them, and random rows round-trip within the
// error each format allows. The Q4_K search is held to beat the plain min/max fit it replaces.
// quantizeOnLoad on the bundled tiny-chat: which tensors become which blocks, and their bytes.
import { describe, expect, it } from 'vitest';
import { f16BitsToF32, f32ToF16Bits } from '../../../src/engine/tensor/dtype';
import { quantizeQ4_K, quantizeQ8_0 } from '../../../src/engine/model/quant/quantize';
import { quantizeOnLoad } from '../../../src/engine/model/quant/quantize-on-load';
import { loadModelFiles } from '../../../src/engine/model/files/repo';
import { BundledSource } from '../../../src/engine/model/sources/bundled-source';
import { roundToDtype } from '../../../src/engine/tensor/dtype';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { embeddingScaleOf } from '../../../src/engine/model/weights/vector-values';
import { testConfig } from '../../../src/engine/reference/random-model';
import { dequantize } from '../../../src/engine/model/quant/dequant';
import { Rng } from '../../../src/engine/tensor/random';

const rms = (a: Float32Array, b: Float32Array) => Math.sqrt(a.reduce((s, v, i) => s + (v - b[i]) ** 2, 0) / a.length);

describe('Q8_0 quantizer', () => {
  it('writes f16 d = max|x| / 127 in bytes 0-1 and q = x / d (the stored d) as signed bytes 2-33', () => {
    const x = new Float32Array(64);
    x[5] = -2.54; // block 0: amax 2.54, d = 0.02
    x[6] = 1.01;
    x[32 + 31] = 0.5; // block 1: a lone positive value
    const out = quantizeQ8_0(x);
    expect(out.length).toBe(68);
    const view = new DataView(out.buffer);
    expect(view.getUint16(0, true)).toBe(f32ToF16Bits(2.54 / 127));
    expect(view.getInt8(2 + 5)).toBe(-127);
    // Rounded against the stored f16 d (0.020004...): 1.01 / d = 50.49, where 1.01 / 2.54 * 127 is 50.5.
    expect(view.getInt8(2 + 6)).toBe(50);
    expect(Math.fround(1.01) / f16BitsToF32(f32ToF16Bits(2.54 / 127))).toBeCloseTo(50.49, 2);
    expect([...out.subarray(9, 34)].every((b) => b === 0)).toBe(true);
    expect(view.getUint16(34, true)).toBe(f32ToF16Bits(0.5 / 127));
    expect(view.getInt8(34 + 2 + 31)).toBe(127);
  });

  it('round-trips random rows within half a step per value (RMS 0.0052 of σ)', () => {
    const x = new Rng(7).normals(32 * 256);
    const y = dequantize('Q8_0', quantizeQ8_0(x), x.length);
    const view = new DataView(quantizeQ8_0(x).buffer);
    for (let b = 0; b < x.length / 32; b++) {
      const d = f16BitsToF32(view.getUint16(b * 34, true));
      for (let j = 0; j < 32; j++) expect(Math.abs(y[b * 32 + j] - x[b * 32 + j])).toBeLessThanOrEqual(d / 2 + 1e-3 * d * 127);
    }
    expect(rms(x, y)).toBeLessThan(0.006);
  });
});

/** The fit quantize.ts improves on: each sub-block from its own min and max, coded the same way. */
function minMaxQ4_K(x: Float32Array): Float32Array {
  const y = new Float32Array(x.length);
  for (let b = 0; b < x.length; b += 256) {
    const subs = Array.from({ length: 8 }, (_, j) => {
      const s = x.subarray(b + 32 * j, b + 32 * j + 32);
      const lo = Math.min(0, ...s);
      return { scale: (Math.max(...s) - lo) / 15, min: -lo };
    });
    const d = f16BitsToF32(f32ToF16Bits(Math.max(...subs.map((s) => s.scale)) / 63));
    const dmin = f16BitsToF32(f32ToF16Bits(Math.max(...subs.map((s) => s.min)) / 63));
    subs.forEach((s, j) => {
      const step = d * Math.round(s.scale / d);
      const min = dmin * Math.round(s.min / dmin);
      for (let i = 0; i < 32; i++) {
        const at = b + 32 * j + i;
        y[at] = step * Math.max(0, Math.min(15, Math.round((x[at] + min) / step))) - min;
      }
    });
  }
  return y;
}

describe('Q4_K quantizer', () => {
  it('packs d, dmin, the 6-bit scales and mins and the nibbles as block_q4_K: an exact grid round-trips exactly', () => {
    // Sub-block j is the ramp 0..15 (twice) times sc[j] / 64: d = 1/64 exactly, every min 0.
    const sc = [63, 1, 2, 3, 40, 50, 17, 33];
    const x = new Float32Array(256).map((_, e) => ((e % 16) * sc[e >> 5]) / 64);
    const out = quantizeQ4_K(x);
    expect(out.length).toBe(144);
    expect(dequantize('Q4_K', out, 256)).toEqual(x);
    const view = new DataView(out.buffer);
    expect(view.getUint16(0, true)).toBe(f32ToF16Bits(1 / 64)); // d
    expect(view.getUint16(2, true)).toBe(0); // dmin
    // Scales 0-3 in the low 6 bits of bytes 4-7, with the top 2 bits of scales 4-7 above them;
    // mins 0-3 in bytes 8-11; scales 4-7 in the low nibbles of bytes 12-15.
    expect([...out.subarray(4, 8)]).toEqual([63 | ((40 >> 4) << 6), 1 | ((50 >> 4) << 6), 2 | ((17 >> 4) << 6), 3 | ((33 >> 4) << 6)]);
    expect([...out.subarray(8, 12)]).toEqual([0, 0, 0, 0]);
    expect([...out.subarray(12, 16)]).toEqual([40 & 15, 50 & 15, 17 & 15, 33 & 15]);
    // Sub-blocks 0 and 1 share bytes 16-47: 0 in the low nibbles, 1 in the high ones.
    expect(out[16 + 3]).toBe(3 | (3 << 4));
  });

  it('round-trips random rows with negative values (dmin, mins) more closely than a min/max fit', () => {
    const x = new Rng(11).normals(256 * 64);
    const y = dequantize('Q4_K', quantizeQ4_K(x), x.length);
    const err = rms(x, y);
    const naive = rms(x, minMaxQ4_K(x));
    // Measured: 0.071 σ against the min/max fit's 0.078 σ.
    expect(err).toBeLessThan(0.075);
    expect(err).toBeLessThan(0.93 * naive);
  });

  it('keeps a row of zeros and a constant row exact enough', () => {
    expect(dequantize('Q4_K', quantizeQ4_K(new Float32Array(256)), 256)).toEqual(new Float32Array(256));
    const y = dequantize('Q4_K', quantizeQ4_K(new Float32Array(256).fill(-0.75)), 256);
    for (const v of y) expect(v).toBeCloseTo(-0.75, 2);
  });
});

describe('quantizeOnLoad', () => {
  it('streams tiny-chat (bf16, tied) as Q8_0 blocks, the embedding included; norms stay as they are', async () => {
    const files = await loadModelFiles(new BundledSource('models/tiny-chat/'));
    const q8 = quantizeOnLoad(files, 'q8_0');
    expect(q8.fileWeightBytes).toBe(files.weightBytes);
    expect(q8.weightBytes).toBe((files.weightBytes / 2 - 9 * 256) * (34 / 32) + 9 * 256 * 2);
    const originals = new Map<string, Float32Array>();
    for await (const t of files.tensors()) originals.set(t.name, tensorToF32(t));
    for await (const t of q8.tensors()) {
      const entry = q8.weights.find((w) => w.name === t.name)!;
      expect([t.dtype, t.data.length]).toEqual([entry.dtype, entry.bytes]);
      if (t.shape.length === 1) {
        expect(t.dtype).toBe('bf16');
        continue;
      }
      expect(t.dtype).toBe('q8_0');
      // The embedding (4096 x 256) is quantized in several slices: the blocks are those of one pass.
      if (t.name === 'model.embed_tokens.weight') {
        expect(Buffer.from(t.data).equals(quantizeQ8_0(originals.get(t.name)!))).toBe(true); // one Buffer compare: toEqual is slow on 1 MB
      }
    }
  });

  it('scales a Gemma embedding by its normaliser in f32, whatever the weights are stored as (issue 21)', () => {
    const cfg = { ...testConfig('llama'), embeddingScale: Math.sqrt(640) };
    expect(embeddingScaleOf(cfg)).toBe(Math.fround(Math.sqrt(640)));
    // Not bf16's 25.25: transformers in float32 and llama.cpp both scale by the f32 value.
    expect(embeddingScaleOf(cfg)).not.toBe(roundToDtype([Math.sqrt(640)], 'bf16')[0]);
  });
});
