/**
 * Rotary position embedding, reference, HF semantics (non-interleaved rotate_half):
 * out = x * cos + rotate_half(x) * sin, rotate_half([x1 | x2]) = [-x2 | x1], cos/sin = cat(f, f)
 * with f = pos * invFreq (model/rope.ts computes invFreq with the model's scaling).
 * Legend: T tokens, NH heads, HS head dim.
 */
import type { Floats } from './floats';
import { ropeAngle } from '../model/rope';

export function ropeForward(
  out: Floats, // (T, NH, HS); may alias inp
  inp: Floats, // (T, NH, HS)
  positions: ArrayLike<number>, // (T,)
  invFreq: Floats, // (HS/2,)
  T: number,
  NH: number,
  HS: number,
): void {
  const half = HS / 2;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < NH; h++) {
      const base = (t * NH + h) * HS;
      for (let i = 0; i < half; i++) {
        const a = ropeAngle(positions[t], invFreq[i]);
        const cos = Math.fround(Math.cos(a));
        const sin = Math.fround(Math.sin(a));
        const x1 = inp[base + i];
        const x2 = inp[base + half + i];
        out[base + i] = x1 * cos - x2 * sin;
        out[base + half + i] = x2 * cos + x1 * sin;
      }
    }
  }
}

/**
 * Backward of ropeForward, accumulating: the rotation by +theta is orthogonal, so its transpose is
 * the rotation by -theta. The forward was
 *   out1 = x1 cos - x2 sin,  out2 = x2 cos + x1 sin
 * so dx1 += d1 cos + d2 sin and dx2 += d2 cos - d1 sin, with the forward's f32 cos and sin.
 */
export function ropeBackward(
  dinp: Floats, // (T, NH, HS) accumulated; must not alias dout
  dout: Floats, // (T, NH, HS)
  positions: ArrayLike<number>, // (T,)
  invFreq: Floats, // (HS/2,)
  T: number,
  NH: number,
  HS: number,
): void {
  const half = HS / 2;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < NH; h++) {
      const base = (t * NH + h) * HS;
      for (let i = 0; i < half; i++) {
        const a = ropeAngle(positions[t], invFreq[i]);
        const cos = Math.fround(Math.cos(a));
        const sin = Math.fround(Math.sin(a));
        const d1 = dout[base + i];
        const d2 = dout[base + half + i];
        dinp[base + i] += d1 * cos + d2 * sin;
        dinp[base + half + i] += d2 * cos - d1 * sin;
      }
    }
  }
}
