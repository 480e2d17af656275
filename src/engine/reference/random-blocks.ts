/**
 * Seeded random GGML blocks for tests and model making: every quant bit random, the f16 scales
 * (d, and dmin / m where the type has them) set so that dequantized values stay within about
 * ±`amplitude`. Any bit pattern is a valid block, so random blocks exercise every code path of a
 * decoder; only the scales need taming (random f16 bits would be Inf/NaN or huge).
 *
 * Not a quantizer: it makes blocks, not the blocks of given values.
 */
import { f32ToF16Bits } from '../tensor/dtype';
import { ggmlBytes, ggmlType } from '../tensor/ggml-types';
import { Rng } from '../tensor/random';

/** Byte offsets of the f16 fields in one block, and the largest |q * scale| product of the type. */
const SCALE_FIELDS: Readonly<Record<string, { d: number; min?: number; qmax: number }>> = {
  Q8_0: { d: 0, qmax: 127 },
  Q4_0: { d: 0, qmax: 8 },
  Q4_1: { d: 0, min: 2, qmax: 15 },
  Q5_0: { d: 0, qmax: 16 },
  Q5_1: { d: 0, min: 2, qmax: 31 },
  Q2_K: { d: 80, min: 82, qmax: 15 * 3 },
  Q3_K: { d: 108, qmax: 32 * 4 },
  Q4_K: { d: 0, min: 2, qmax: 63 * 15 },
  Q5_K: { d: 0, min: 2, qmax: 63 * 31 },
  Q6_K: { d: 208, qmax: 128 * 32 },
};

/** `elements` values of type `typeName` as random blocks; plain float types get normals * amplitude/2. */
export function randomBlocks(typeName: string, elements: number, amplitude: number, rng: Rng): Uint8Array {
  const t = ggmlType(typeName);
  const out = new Uint8Array(ggmlBytes(t, elements));
  const view = new DataView(out.buffer);
  if (t.blockSize === 1) {
    for (let i = 0; i < elements; i++) {
      const v = rng.normal() * amplitude * 0.5;
      if (typeName === 'F32') view.setFloat32(i * 4, v, true);
      else if (typeName === 'F16') view.setUint16(i * 2, f32ToF16Bits(v), true);
      else view.setUint16(i * 2, new Uint32Array(new Float32Array([v]).buffer)[0] >>> 16, true);
    }
    return out;
  }
  for (let i = 0; i < out.length; i++) out[i] = rng.int(256);
  tameBlockScales(typeName, out, amplitude, rng);
  return out;
}

/**
 * Sets the f16 scale fields of every block in `blocks` (quant bits left as they are) so the
 * dequantized values stay within about ±`amplitude`: random bytes from any source become valid
 * blocks (the bench fills gigabytes with crypto's generator, then tames them).
 */
export function tameBlockScales(typeName: string, blocks: Uint8Array, amplitude: number, rng: Rng): void {
  const t = ggmlType(typeName);
  const fields = SCALE_FIELDS[typeName];
  if (!fields) throw new Error(`randomBlocks: no scale layout for ${typeName}`);
  const view = new DataView(blocks.buffer, blocks.byteOffset, blocks.byteLength);
  for (let blk = 0; blk < blocks.length / t.typeSize; blk++) {
    const o = blk * t.typeSize;
    // d in [0.5, 1] of the full-range scale, so most values use the bits they have.
    view.setUint16(o + fields.d, f32ToF16Bits((amplitude / fields.qmax) * (0.5 + 0.5 * rng.uniform())), true);
    if (fields.min !== undefined) {
      // K-quants subtract dmin * m (m up to 63); the legacy types add m directly.
      const minScale = typeName.endsWith('_K') ? amplitude / (2 * 63) : -amplitude / 2;
      view.setUint16(o + fields.min, f32ToF16Bits(minScale * rng.uniform()), true);
    }
  }
}
