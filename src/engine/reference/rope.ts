/**
 * Rotary position embedding, reference, HF semantics (non-interleaved rotate_half):
 * out = x * cos + rotate_half(x) * sin, rotate_half([x1 | x2]) = [-x2 | x1], cos/sin = cat(f, f)
 * with f = pos * invFreq (model/rope.ts computes invFreq with the model's scaling).
 * Partial rotary (Phi-3 `partial_rotary_factor`, transformers modeling_phi3.py `apply_rotary_pos_emb`):
 * only the first R = 2 * invFreq.length dims of a head rotate, the pairs being (i, i + R/2); the
 * rest pass through unchanged.
 * `freqs` is either plain inverse frequencies or a model's RopeFreqs (LongRoPE's per-position
 * factors and cos/sin scale, model/rope.ts).
 * Legend: T tokens, NH heads, HS head dim.
 */
import type { Floats } from './floats';
import { ropeAngle, ropeCosSin, type RopeFreqs } from '../model/rope';

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
 * Walks every head of every token: `pair(a, b, cos, sin)` for each rotated pair (element a of the
 * first half, b of the second), `pass(d)` for each dim past the rotated ones.
 */
function forEachRotation(
  [positions, freqs, T, NH, HS]: RopeArgs,
  pair: (a: number, b: number, cos: number, sin: number) => void,
  pass: (d: number) => void,
): void {
  const half = rotatedHalf(freqs, HS);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < NH; h++) {
      const base = (t * NH + h) * HS;
      for (let i = 0; i < half; i++) pair(base + i, base + half + i, ...cosSin(freqs, positions[t], i));
      for (let d = 2 * half; d < HS; d++) pass(base + d);
    }
  }
}

export function ropeForward(
  out: Floats, // (T, NH, HS); may alias inp
  inp: Floats, // (T, NH, HS)
  ...args: RopeArgs
): void {
  forEachRotation(
    args,
    (a, b, cos, sin) => {
      const x1 = inp[a];
      const x2 = inp[b];
      out[a] = x1 * cos - x2 * sin;
      out[b] = x2 * cos + x1 * sin;
    },
    (d) => (out[d] = inp[d]),
  );
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
  forEachRotation(
    args,
    (a, b, cos, sin) => {
      const d1 = dout[a];
      const d2 = dout[b];
      dinp[a] += d1 * cos + d2 * sin;
      dinp[b] += d2 * cos - d1 * sin;
    },
    (d) => (dinp[d] += dout[d]),
  );
}
