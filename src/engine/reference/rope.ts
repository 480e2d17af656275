/**
 * Rotary position embedding, reference, HF semantics (non-interleaved rotate_half):
 * out = x * cos + rotate_half(x) * sin, rotate_half([x1 | x2]) = [-x2 | x1], cos/sin = cat(f, f)
 * with f = pos * invFreq (model/config/rope.ts computes invFreq with the model's scaling).
 * Partial rotary (Phi-3 `partial_rotary_factor`, transformers modeling_phi3.py `apply_rotary_pos_emb`):
 * only the first R = 2 * invFreq.length dims of a head rotate, the pairs being (i, i + R/2); the
 * rest pass through unchanged.
 * `freqs` is either plain inverse frequencies or a model's RopeFreqs (LongRoPE's per-position
 * factors and cos/sin scale, model/config/rope.ts).
 * Legend: T tokens, NH heads, HS head dim.
 */
import type { Floats } from './floats';
import { ropeAngle, ropeCosSin, type RopeFreqs } from '../model/config/rope';

/** f32 (cos, sin) of frequency i at `pos`. */
function cosSin(freqs: Floats | RopeFreqs, pos: number, i: number): [number, number] {
  if ('short' in freqs) return ropeCosSin(freqs, pos, i);
  const a = ropeAngle(pos, freqs[i]);
  return [Math.fround(Math.cos(a)), Math.fround(Math.sin(a))];
}

function rotatedHalf(freqs: Floats | RopeFreqs, HS: number): number {
  const half = 'short' in freqs ? freqs.short.length : freqs.length;
  if (2 * half > HS) throw new Error(`RoPE: ${2 * half} rotated dims exceed the head dim ${HS}`);
  return half;
}

/** What both directions take after the buffers: positions (T,), inverse frequencies (R/2,) with R <= HS, T, NH, HS. */
type RopeArgs = [positions: ArrayLike<number>, freqs: Floats | RopeFreqs, T: number, NH: number, HS: number];

/**
 * dst = (or += with accumulate) src with each head's pairs rotated by sign * theta:
 *   y1 = x1 cos - x2 sin',  y2 = x2 cos + x1 sin',  sin' = sign * sin (negating is exact);
 * dims past the rotated ones copied (or added) through.
 */
function rotate(dst: Floats, src: Floats, sign: 1 | -1, accumulate: boolean, [positions, freqs, T, NH, HS]: RopeArgs): void {
  const half = rotatedHalf(freqs, HS);
  const put = (at: number, y: number) => (dst[at] = accumulate ? dst[at] + y : y);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < NH; h++) {
      const base = (t * NH + h) * HS;
      for (let i = 0; i < half; i++) {
        const [cos, sin] = cosSin(freqs, positions[t], i);
        const s = sign * sin;
        const x1 = src[base + i];
        const x2 = src[base + half + i];
        put(base + i, x1 * cos - x2 * s);
        put(base + half + i, x2 * cos + x1 * s);
      }
      for (let d = 2 * half; d < HS; d++) put(base + d, src[base + d]);
    }
  }
}

export function ropeForward(
  out: Floats, // (T, NH, HS); may alias inp
  inp: Floats, // (T, NH, HS)
  ...args: RopeArgs
): void {
  rotate(out, inp, 1, false, args);
}

/**
 * Backward of ropeForward, accumulating: the rotation by +theta is orthogonal, so its transpose is
 * the rotation by -theta. The forward was
 *   out1 = x1 cos - x2 sin,  out2 = x2 cos + x1 sin
 * so dx1 += d1 cos + d2 sin and dx2 += d2 cos - d1 sin, with the forward's f32 cos and sin (a
 * LongRoPE scale is part of both, and the transpose keeps it). Pass-through dims: dx += d.
 */
export function ropeBackward(
  dinp: Floats, // (T, NH, HS) accumulated; must not alias dout
  dout: Floats, // (T, NH, HS)
  ...args: RopeArgs
): void {
  rotate(dinp, dout, -1, true, args);
}
