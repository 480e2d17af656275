/**
 * The sampler's noise in plain TypeScript: a counter-based hash of (seed, step, token id) and the
 * Gumbel variate derived from it. The WGSL twin is `noise_bits` / `gumbel` in
 * kernels/sampler-common.wgsl; the integer part is bit-identical on every device, so the same seed
 * gives the same uniform u for every token at every step, with no RNG state to carry.
 *
 * Hash: pcg4d (Jarzynski & Olano, "Hash Functions for GPU Rendering", JCGT 2020), a 4-input
 * permutation built from LCG steps and cross-lane multiplies; inputs are (seed low word, seed high
 * word, step, token id) and the last lane is used. u = (top 23 bits + 0.5) / 2^23 lies strictly
 * inside (0, 1) and is exact in f32. Gumbel g = -log(-log u): argmax over tokens of logit/T + g is
 * a draw from softmax(logit/T) (Gumbel-max, the same law as vLLM's argmax(p / q), q ~ Exp(1)).
 * Not here: the sampling pipeline (sampler.ts).
 */

const LCG_MUL = 1664525;
const LCG_ADD = 1013904223;

/** pcg4d on four u32 lanes; returns the four mixed lanes. */
export function pcg4d(x: number, y: number, z: number, w: number): [number, number, number, number] {
  x = (Math.imul(x, LCG_MUL) + LCG_ADD) >>> 0;
  y = (Math.imul(y, LCG_MUL) + LCG_ADD) >>> 0;
  z = (Math.imul(z, LCG_MUL) + LCG_ADD) >>> 0;
  w = (Math.imul(w, LCG_MUL) + LCG_ADD) >>> 0;
  x = (x + Math.imul(y, w)) >>> 0;
  y = (y + Math.imul(z, x)) >>> 0;
  z = (z + Math.imul(x, y)) >>> 0;
  w = (w + Math.imul(y, z)) >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  y = (y ^ (y >>> 16)) >>> 0;
  z = (z ^ (z >>> 16)) >>> 0;
  w = (w ^ (w >>> 16)) >>> 0;
  x = (x + Math.imul(y, w)) >>> 0;
  y = (y + Math.imul(z, x)) >>> 0;
  z = (z + Math.imul(x, y)) >>> 0;
  w = (w + Math.imul(y, z)) >>> 0;
  return [x, y, z, w];
}

/** The 32 noise bits of token `token` at step `step` of a sequence seeded (seedLo, seedHi). */
export function noiseBits(seedLo: number, seedHi: number, step: number, token: number): number {
  return pcg4d(seedLo >>> 0, seedHi >>> 0, step >>> 0, token >>> 0)[3];
}

/** u in (0, 1): the top 23 bits plus one half, over 2^23 (exact in f32). */
export function noiseUniform(bits: number): number {
  return ((bits >>> 9) + 0.5) / 8388608;
}

/** g = -log(-log u) in f64 (the GPU computes the same in f32 with a series near u = 1). */
export function gumbelFromUniform(u: number): number {
  return -Math.log(-Math.log(u));
}

export function gumbel(seedLo: number, seedHi: number, step: number, token: number): number {
  return gumbelFromUniform(noiseUniform(noiseBits(seedLo, seedHi, step, token)));
}
