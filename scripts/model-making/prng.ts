/**
 * A small seeded PRNG for model making: sfc32 (Chris Doty-Humphrey's Small Fast Counting
 * generator), seeded through splitmix32. Only integer arithmetic, so the same seed gives the same
 * stream on every machine and every Node version, which is what makes `npm run make-models`
 * byte-identical from run to run. Not a cryptographic generator.
 */

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    // splitmix32 spreads a small seed over the four words of state.
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32(); // warm-up, as sfc32's author recommends
  }

  /** Next 32-bit unsigned integer. */
  u32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1) with 32 bits of resolution (exact in a double). */
  uniform(): number {
    return this.u32() / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }

  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  chance(p: number): boolean {
    return this.uniform() < p;
  }

  /**
   * Approximately standard normal: the Irwin-Hall sum of 4 uniforms, centred and scaled to unit
   * variance (bounded at +-3.46). Plain arithmetic, no Math.log/cos, so results cannot drift
   * between platforms' libm; plenty for initialising random weights.
   */
  normal(): number {
    const s = this.uniform() + this.uniform() + this.uniform() + this.uniform();
    return (s - 2) * 1.7320508075688772; // var of the sum is 4/12, so scale by sqrt(3)
  }
}
