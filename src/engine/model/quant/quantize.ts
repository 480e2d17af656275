/**
 * Quantizers: f32 values -> GGML blocks of Q8_0 or Q4_K, in exactly the layout that
 * model/quant/dequant.ts and the packed-q8_0 / packed-q4_k kernels read (ggml-common.h `block_q8_0`,
 * `block_q4_K`). Used to load a safetensors model quantized (quantize-on-load.ts).
 *
 * - Q8_0 (34 bytes per 32 values): d = max|x| / 127 stored as f16, q = x / d rounded (halves away
 *   from zero) against the stored d, |q| <= 127. ggml's reference quantizer rounds against the
 *   unrounded d; the stored one is what the dequantizer reads, and it makes the GPU kernel's bytes
 *   exactly these (kernels/quantize-q8_0.wgsl: WGSL division is not correctly rounded, products of
 *   an f16 and a small integer are exact). Error: at most d / 2 per value.
 * - Q4_K (144 bytes per 256 values): 8 sub-blocks of 32, each x ≈ d·sc·q − dmin·m with 4-bit q and
 *   6-bit sc, m. Each sub-block's scale and min come from a weighted least-squares search (the
 *   approach of llama.cpp's make_qkx2_quants, ggml/src/ggml-quants.c): start from min/max, then
 *   try 21 slightly different grid spacings, refit scale and min by least squares for each
 *   rounding and keep the fit with the smallest weighted squared error (weights |x| + rms, so large
 *   values count more). The 8 scales and mins are then coded on 6 bits against the block's f16
 *   d and dmin, and the quants are chosen once more against those stored values.
 *   Measured on Gaussian rows (test/unit/model/quantize.test.ts): RMS error 0.071·σ for Q4_K
 *   (a plain min/max fit with the same coding: 0.078·σ), 0.0052·σ for Q8_0.
 *
 * Not here: which tensors are quantized (quantize-on-load.ts), dequantizing (dequant.ts).
 */
import { f16BitsToF32, f32ToF16Bits, type QuantizeTarget } from '../../tensor/dtype';
import { ggmlBytes, ggmlType, QK_K } from '../../tensor/ggml-types';

/** Elements per block of a quantize target: a row whose length is not a multiple stays as it is. */
export function quantizeBlockSize(target: QuantizeTarget): number {
  return target === 'q8_0' ? 32 : QK_K;
}

/** `x` (whole blocks of `target`) as `target` blocks. */
export function quantize(target: QuantizeTarget, x: Float32Array): Uint8Array {
  return target === 'q8_0' ? quantizeQ8_0(x) : quantizeQ4_K(x);
}

/** f32 -> the value an f16 holds, and its bits. */
function toF16(v: number): { bits: number; value: number } {
  const bits = f32ToF16Bits(v);
  return { bits, value: f16BitsToF32(bits) };
}

/** Q8_0 blocks: f16 d, then 32 signed bytes q with x ≈ q·d. */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  const out = new Uint8Array(ggmlBytes(ggmlType('Q8_0'), x.length));
  const view = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b++) {
    const at = b * 32;
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[at + j]));
    // The f16 nearest the exact quotient (a double quotient of an f32 by 127 rounds to f16 as it would).
    const d = toF16(amax / 127);
    view.setUint16(b * 34, d.bits, true);
    // A d of 0 (or inf, from |x| > 8.3e6) gives q = 0. A subnormal f16 d may be coarser than max|x| / 127: clamp.
    const ok = d.value > 0 && Number.isFinite(d.value);
    for (let j = 0; j < 32; j++) {
      view.setInt8(b * 34 + 2 + j, ok ? Math.max(-127, Math.min(127, roundHalfAway(x[at + j] / d.value))) : 0);
    }
  }
  return out;
}

function roundHalfAway(v: number): number {
  return Math.sign(v) * Math.round(Math.abs(v));
}

const SUB = 32;
const Q4_MAX = 15;

/** One sub-block's fit: x ≈ scale·q + offset (offset ≤ 0, stored as min = −offset). */
export interface Fit {
  scale: number;
  offset: number;
}

/** A candidate fit of the search and its weighted squared error. */
export interface ScoredFit extends Fit {
  error: number;
}

/** x − lo of the sub-block being fitted (scratch). */
const shifted = new Float64Array(SUB);

/** The scale and offset of one sub-block of 32: the first candidate of least error (searchFits). */
function fitSubBlock(x: Float32Array, at: number, w: Float32Array): Fit {
  let best: Fit = { scale: 0, offset: Math.min(0, x[at]) };
  let bestError = Infinity;
  searchFits(x, at, w, (scale, offset, error) => {
    if (error < bestError) {
      bestError = error;
      best = { scale, offset };
    }
  });
  return best;
}

/**
 * Every candidate fit of one sub-block of 32, in search order (searchFits). Exported for the GPU
 * test, which checks the kernel's choices among candidates that tie within f32 rounding.
 */
export function fitCandidates(x: Float32Array, at: number, w: Float32Array): ScoredFit[] {
  const out: ScoredFit[] = [];
  searchFits(x, at, w, (scale, offset, error) => out.push({ scale, offset, error }));
  return out;
}

/**
 * Each candidate fit of one sub-block of 32 in turn, to `visit`: weighted least squares over a few
 * roundings (see the header). `w` are the weights of the squared error. The error of each candidate
 * comes from the sums the fit already has (Σw(s·q + m − x)² expanded), so each candidate is one pass.
 * A constant sub-block has one: scale 0.
 */
function searchFits(x: Float32Array, at: number, w: Float32Array, visit: (scale: number, offset: number, error: number) => void): void {
  let lo = x[at];
  let hi = x[at];
  let sumW = 0;
  let sumX = 0;
  let sumX2 = 0;
  for (let i = 0; i < SUB; i++) {
    const v = x[at + i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    sumW += w[i];
    sumX += w[i] * v;
    sumX2 += w[i] * v * v;
  }
  // The offset is a subtracted min: never positive, so a sub-block of positive values starts at 0.
  if (lo > 0) lo = 0;
  if (hi === lo) return visit(0, lo, 0);
  for (let i = 0; i < SUB; i++) shifted[i] = x[at + i] - lo;
  // Σw(s·q + m − x)² from the weighted sums of q, q², q·x (and of 1, x, x²).
  const error = (s: number, m: number, sumL: number, sumL2: number, sumXL: number) =>
    s * s * sumL2 + 2 * s * m * sumL - 2 * s * sumXL + m * m * sumW - 2 * m * sumX + sumX2;
  // Grids of Q4_MAX − 1 ... Q4_MAX + 1 steps over [lo, hi] (and Q4_MAX itself, kept as it is, first):
  // each rounds some values differently, and the least-squares refit of each is a candidate.
  for (let step = -1; step <= 20; step++) {
    const steps = step < 0 ? Q4_MAX : Q4_MAX - 1 + 0.1 * step;
    const inv = steps / (hi - lo);
    // hi lands on `steps` exactly, a tie for 14.5: rounded here, not by the rounding of inv · (hi − lo)
    // (which differs between this double and the GPU kernel's f32).
    const top = Math.min(Q4_MAX, Math.floor(steps + 0.5));
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < SUB; i++) {
      // shifted ≥ 0: truncating v + 0.5 rounds it.
      let q = x[at + i] === hi ? top : (inv * shifted[i] + 0.5) | 0;
      if (q > Q4_MAX) q = Q4_MAX;
      const wq = w[i] * q;
      sumL += wq;
      sumL2 += wq * q;
      sumXL += wq * x[at + i];
    }
    let scale: number;
    let offset: number;
    if (step < 0) {
      scale = 1 / inv;
      offset = lo;
    } else {
      const det = sumW * sumL2 - sumL * sumL;
      if (!(det > 0)) continue;
      scale = (sumW * sumXL - sumX * sumL) / det;
      offset = (sumL2 * sumX - sumL * sumXL) / det;
      if (offset > 0) {
        offset = 0;
        scale = sumXL / sumL2;
      }
    }
    visit(scale, offset, error(scale, offset, sumL, sumL2, sumXL));
  }
}

function clampQ(q: number): number {
  return Math.max(0, Math.min(Q4_MAX, q));
}

/**
 * Q4_K super-blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (sub-blocks 0-3 in the low
 * 6 bits of bytes 0-3 and 4-7; 4-7 in the nibbles of bytes 8-11 with their top 2 bits in the high
 * bits of bytes 0-7), then 128 bytes of nibbles (sub-block 2k in the low nibbles of bytes 32k..,
 * 2k+1 in the high ones).
 */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  const out = new Uint8Array(ggmlBytes(ggmlType('Q4_K'), x.length));
  const w = new Float32Array(SUB);
  for (let b = 0; b < x.length / QK_K; b++) {
    const at = b * QK_K;
    const fits = Array.from({ length: 8 }, (_, j) => fitSubBlock(x, at + j * SUB, subBlockWeights(x, at + j * SUB, w)));
    encodeQ4_K(x, at, fits, out, b * 144);
  }
  return out;
}

/** The weights of one sub-block's squared error: |x| + the sub-block's rms (into `w` when given). */
export function subBlockWeights(x: Float32Array, s: number, w = new Float32Array(SUB)): Float32Array {
  let sumX2 = 0;
  for (let i = 0; i < SUB; i++) sumX2 += x[s + i] * x[s + i];
  const rms = Math.sqrt(sumX2 / SUB);
  for (let i = 0; i < SUB; i++) w[i] = rms + Math.abs(x[s + i]);
  return w;
}

/** The super-block of x[at..at + 256) from its 8 sub-blocks' fits, into out[o..o + 144) (zeroed). */
export function encodeQ4_K(x: Float32Array, at: number, fits: readonly Fit[], out: Uint8Array, o: number): void {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let maxScale = 0;
  let maxMin = 0;
  for (const f of fits) {
    maxScale = Math.max(maxScale, f.scale);
    maxMin = Math.max(maxMin, -f.offset);
  }
  const d = toF16(maxScale / 63);
  const dmin = toF16(maxMin / 63);
  view.setUint16(o, d.bits, true);
  view.setUint16(o + 2, dmin.bits, true);
  // 6-bit codes of each scale and min against the block's largest (a fit's scale is never negative:
  // its rounding grows with x; clamped all the same, as a code outside 0..63 would corrupt the bytes).
  const code = (v: number, max: number) => (max > 0 ? Math.max(0, Math.min(63, Math.round((63 / max) * v))) : 0);
  const sc = fits.map((f) => code(f.scale, maxScale));
  const mn = fits.map((f) => code(-f.offset, maxMin));
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      out[o + 4 + j] = sc[j];
      out[o + 8 + j] = mn[j];
    } else {
      out[o + 8 + j] = (sc[j] & 0xf) | ((mn[j] & 0xf) << 4);
      out[o + j] |= (sc[j] >> 4) << 6;
      out[o + 4 + j] |= (mn[j] >> 4) << 6;
    }
  }
  // The quants against what the decoder will read: the stored f16 d, dmin and 6-bit sc, m.
  for (let j = 0; j < 8; j++) {
    const step = Math.fround(d.value * sc[j]);
    const min = Math.fround(dmin.value * mn[j]);
    const nib = o + 16 + 32 * (j >> 1);
    const shift = 4 * (j & 1);
    for (let i = 0; i < SUB; i++) {
      const q = step > 0 ? clampQ(Math.round((x[at + j * SUB + i] + min) / step)) : 0;
      out[nib + i] |= q << shift;
    }
  }
}
