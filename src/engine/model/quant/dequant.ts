/**
 * The CPU dequantizer of GGML blocks to f32: plain loops, one function per block type, in the
 * order and arithmetic of ggml's `dequantize_row_*` (ggml/src/ggml-quants.c), so the result equals
 * llama.cpp's bit for bit (every product is one f32 multiply of an f16 scale by a small integer,
 * then one subtract of the min). WeightSet decodes 1-D tensors with it and quantize-on-load its
 * source blocks; it is also the oracle for the quantized GPU kernels and for GGUF loading.
 *
 * Layouts (ggml-common.h, little-endian, f16 scales): see each function. Not here: the type table
 * (tensor/ggml-types.ts), quantizing (quantize.ts; the tests also write random blocks: every bit
 * pattern is a valid block).
 */
import { ggmlBytes, ggmlType, QK_K } from '../../tensor/ggml-types';
import { bf16BitsToF32, f16BitsToF32 } from '../../tensor/dtype';
import { tensorToF32 } from '../../tensor/tensor-data';
import { ggmlName, isBlockDType } from '../../tensor/dtype';
import { numel, type TensorData } from '../../tensor/tensor-data';

type BlockDecoder = (b: Uint8Array, o: number, y: Float32Array, yo: number) => void;

const f16 = (b: Uint8Array, o: number) => Math.fround(f16BitsToF32(b[o] | (b[o + 1] << 8)));
const mul = Math.fround;

/** Q8_0: f16 d, 32 x i8 q; y = q * d. */
function q8_0(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  for (let j = 0; j < 32; j++) y[yo + j] = mul(((b[o + 2 + j] << 24) >> 24) * d);
}

/** Q4_0: f16 d, 16 B nibbles; low nibbles are elements 0..15, high 16..31; y = (q - 8) * d. */
function q4_0(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  for (let j = 0; j < 16; j++) {
    const q = b[o + 2 + j];
    y[yo + j] = mul(((q & 0xf) - 8) * d);
    y[yo + j + 16] = mul(((q >> 4) - 8) * d);
  }
}

/** Q4_1: f16 d, f16 m, 16 B nibbles; y = q * d + m. */
function q4_1(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  const m = f16(b, o + 2);
  for (let j = 0; j < 16; j++) {
    const q = b[o + 4 + j];
    y[yo + j] = mul(mul((q & 0xf) * d) + m);
    y[yo + j + 16] = mul(mul((q >> 4) * d) + m);
  }
}

/** The 5th bit of element j (j < 16) and of element j + 16 from Q5's 32-bit qh. */
function q5Bits(qh: number, j: number): [number, number] {
  return [((qh >>> j) << 4) & 0x10, (qh >>> (j + 12)) & 0x10];
}

const u32At = (b: Uint8Array, o: number) => (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;

/** Q5_0: f16 d, u32 qh (5th bits), 16 B nibbles; y = (q - 16) * d. */
function q5_0(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  const qh = u32At(b, o + 2);
  for (let j = 0; j < 16; j++) {
    const q = b[o + 6 + j];
    const [h0, h1] = q5Bits(qh, j);
    y[yo + j] = mul((((q & 0xf) | h0) - 16) * d);
    y[yo + j + 16] = mul((((q >> 4) | h1) - 16) * d);
  }
}

/** Q5_1: f16 d, f16 m, u32 qh, 16 B nibbles; y = q * d + m. */
function q5_1(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  const m = f16(b, o + 2);
  const qh = u32At(b, o + 4);
  for (let j = 0; j < 16; j++) {
    const q = b[o + 8 + j];
    const [h0, h1] = q5Bits(qh, j);
    y[yo + j] = mul(mul(((q & 0xf) | h0) * d) + m);
    y[yo + j + 16] = mul(mul(((q >> 4) | h1) * d) + m);
  }
}

/** Q2_K: 16 B scales (low nibble scale, high nibble min), 64 B 2-bit quants, f16 d, f16 dmin. */
function q2_K(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o + 80);
  const min = f16(b, o + 82);
  let q = o + 16;
  let is = 0;
  for (let n = 0; n < QK_K; n += 128) {
    for (let shift = 0; shift < 8; shift += 2) {
      for (const half of [0, 16]) {
        const sc = b[o + is++];
        const dl = mul(d * (sc & 0xf));
        const ml = mul(min * (sc >> 4));
        for (let l = 0; l < 16; l++) y[yo++] = mul(mul(dl * ((b[q + l + half] >> shift) & 3)) - ml);
      }
    }
    q += 32;
  }
}

/** Q3_K: 32 B hmask, 64 B 2-bit quants, 12 B of 16 packed 6-bit scales, f16 d. */
function q3_K(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o + 108);
  const scales = unpackQ3Scales(b, o + 96);
  const hm = o;
  let q = o + 32;
  let is = 0;
  let m = 1;
  for (let n = 0; n < QK_K; n += 128) {
    for (let shift = 0; shift < 8; shift += 2) {
      for (const half of [0, 16]) {
        const dl = mul(d * (scales[is++] - 32));
        for (let l = 0; l < 16; l++) {
          const lo = (b[q + l + half] >> shift) & 3;
          const hi = b[hm + l + half] & m ? 0 : 4;
          y[yo++] = mul(dl * (lo - hi));
        }
      }
      m <<= 1;
    }
    q += 32;
  }
}

/** Q3_K's 16 scales: 12 bytes as 3 u32 words, rearranged exactly as ggml does (kmask1/kmask2). */
function unpackQ3Scales(b: Uint8Array, o: number): Int8Array {
  const aux = new Uint32Array([u32At(b, o), u32At(b, o + 4), u32At(b, o + 8), 0]);
  const kmask1 = 0x03030303;
  const kmask2 = 0x0f0f0f0f;
  const tmp = aux[2];
  aux[2] = ((aux[0] >>> 4) & kmask2) | (((tmp >>> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >>> 4) & kmask2) | (((tmp >>> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >>> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >>> 2) & kmask1) << 4);
  return new Int8Array(aux.buffer);
}

/** Scale and min j (0..7) of Q4_K / Q5_K: 6 bits each, packed in 12 bytes (ggml's get_scale_min_k4). */
function scaleMinK4(j: number, b: Uint8Array, o: number): [number, number] {
  if (j < 4) return [b[o + j] & 63, b[o + j + 4] & 63];
  return [(b[o + j + 4] & 0xf) | ((b[o + j - 4] >> 6) << 4), (b[o + j + 4] >> 4) | ((b[o + j] >> 6) << 4)];
}

/** Sub-blocks is and is + 1 of a Q4_K / Q5_K block: their scales d * sc and offsets dmin * m. */
function subBlockPairK(is: number, d: number, min: number, b: Uint8Array, o: number): [number, number, number, number] {
  const [sc1, m1] = scaleMinK4(is, b, o + 4);
  const [sc2, m2] = scaleMinK4(is + 1, b, o + 4);
  return [mul(d * sc1), mul(min * m1), mul(d * sc2), mul(min * m2)];
}

/** Q4_K: f16 d, f16 dmin, 12 B scales/mins, 128 B nibbles; 8 sub-blocks of 32: y = d*sc*q - dmin*m. */
function q4_K(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  const min = f16(b, o + 2);
  let q = o + 16;
  for (let is = 0; is < 8; is += 2) {
    const [d1, mm1, d2, mm2] = subBlockPairK(is, d, min, b, o);
    for (let l = 0; l < 32; l++) y[yo++] = mul(mul(d1 * (b[q + l] & 0xf)) - mm1);
    for (let l = 0; l < 32; l++) y[yo++] = mul(mul(d2 * (b[q + l] >> 4)) - mm2);
    q += 32;
  }
}

/** Q5_K: as Q4_K plus 32 B qh holding the 5th bit of each element (two bits per 64-element pair). */
function q5_K(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o);
  const min = f16(b, o + 2);
  const qh = o + 16;
  let ql = o + 48;
  let u1 = 1;
  let u2 = 2;
  for (let is = 0; is < 8; is += 2) {
    const [d1, mm1, d2, mm2] = subBlockPairK(is, d, min, b, o);
    for (let l = 0; l < 32; l++) y[yo++] = mul(mul(d1 * ((b[ql + l] & 0xf) + (b[qh + l] & u1 ? 16 : 0))) - mm1);
    for (let l = 0; l < 32; l++) y[yo++] = mul(mul(d2 * ((b[ql + l] >> 4) + (b[qh + l] & u2 ? 16 : 0))) - mm2);
    ql += 32;
    u1 <<= 2;
    u2 <<= 2;
  }
}

/** Q6_K: 128 B low nibbles, 64 B high 2-bit pairs, 16 x i8 scales, f16 d; y = d * sc * (q - 32). */
function q6_K(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  const d = f16(b, o + 208);
  let ql = o;
  let qh = o + 128;
  let sc = o + 192;
  const scale = (i: number) => (b[sc + i] << 24) >> 24;
  for (let n = 0; n < QK_K; n += 128) {
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const h = b[qh + l];
      const q1 = ((b[ql + l] & 0xf) | ((h & 3) << 4)) - 32;
      const q2 = ((b[ql + l + 32] & 0xf) | (((h >> 2) & 3) << 4)) - 32;
      const q3 = ((b[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
      const q4 = ((b[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
      y[yo + n + l] = mul(mul(d * scale(is)) * q1);
      y[yo + n + l + 32] = mul(mul(d * scale(is + 2)) * q2);
      y[yo + n + l + 64] = mul(mul(d * scale(is + 4)) * q3);
      y[yo + n + l + 96] = mul(mul(d * scale(is + 6)) * q4);
    }
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

function f32(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  y[yo] = new DataView(b.buffer, b.byteOffset + o, 4).getFloat32(0, true);
}
function f16Element(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  y[yo] = f16(b, o);
}
function bf16(b: Uint8Array, o: number, y: Float32Array, yo: number): void {
  y[yo] = bf16BitsToF32(b[o] | (b[o + 1] << 8));
}

const DECODERS: Readonly<Record<string, BlockDecoder>> = {
  F32: f32,
  F16: f16Element,
  BF16: bf16,
  Q8_0: q8_0,
  Q4_0: q4_0,
  Q4_1: q4_1,
  Q5_0: q5_0,
  Q5_1: q5_1,
  Q2_K: q2_K,
  Q3_K: q3_K,
  Q4_K: q4_K,
  Q5_K: q5_K,
  Q6_K: q6_K,
};

/** Decodes `elements` values of GGML type `typeName` from `bytes` (whole blocks, ggml order). */
export function dequantize(typeName: string, bytes: Uint8Array, elements: number): Float32Array {
  const t = ggmlType(typeName);
  const decode = DECODERS[typeName];
  if (!decode) throw new Error(`dequantize: no reference decoder for ${typeName}`);
  const need = ggmlBytes(t, elements);
  if (bytes.length < need) throw new Error(`dequantize ${typeName}: ${bytes.length} bytes for ${elements} elements (need ${need})`);
  const y = new Float32Array(elements);
  for (let blk = 0; blk < elements / t.blockSize; blk++) decode(bytes, blk * t.typeSize, y, blk * t.blockSize);
  return y;
}

/** A tensor's elements as f32, whatever its dtype: block types dequantized, plain floats decoded. */
export function dequantizeTensor(t: TensorData): Float32Array {
  return isBlockDType(t.dtype) ? dequantize(ggmlName(t.dtype), t.data, numel(t.shape)) : tensorToF32(t);
}
