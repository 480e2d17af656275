/**
 * Seeded random numbers for tests and model making: the same seed gives the same stream on every
 * machine (mulberry32 for uniforms, Box-Muller for normals). Not cryptographic, not for sampling
 * tokens (the sampler has its own counter-based hash).
 */

/**
 * mulberry32 (Tommy Ettinger's 32-bit generator): uniforms in [0, 1) from a 32-bit seed. The one
 * copy for Hearth: training plans, the demo's problems and tests all draw from it.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  private readonly next: () => number;

  constructor(seed: number) {
    this.next = mulberry32(seed);
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.next();
  }

  /** Standard normal. */
  normal(): number {
    const u = 1 - this.uniform();
    const v = this.uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }

  /** n normals times `scale`. */
  normals(n: number, scale = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * scale;
    return out;
  }

  /** n uniforms in [lo, hi). */
  uniforms(n: number, lo = -1, hi = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * this.uniform();
    return out;
  }
}
