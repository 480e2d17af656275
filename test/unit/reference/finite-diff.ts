/**
 * Central finite differences for the backward checks of test/unit/reference/finite-diff*.test.ts:
 * d loss / d params[i] ~ (loss(p + h e_i) - loss(p - h e_i)) / (actual step), where the actual step
 * is read back from the array after the perturbation (an f32 parameter rounds p +- h; dividing by
 * the rounded difference keeps the estimate exact up to truncation error O(h^2)). Also the
 * derivative along a random direction, which covers every entry of a tensor in two evaluations.
 *
 * Not here: the tolerances, which each test states next to its shapes.
 */
import type { Floats } from '../../../src/engine/reference/floats';
import type { Rng } from '../../../src/engine/tensor/random';

export interface GradCheck {
  /** Entries to check one by one (default: all). */
  indices?: number[];
  /** Step (default 1e-6 for f64 parameters, 1e-3 for f32). */
  h?: number;
  atol: number;
  rtol: number;
}

/** Throws a report naming the worst entries when |analytic - numeric| > atol + rtol |numeric|. */
export function checkGradient(
  label: string,
  params: Floats,
  analytic: ArrayLike<number>,
  loss: () => number,
  opts: GradCheck,
): { maxAbs: number; checked: number } {
  const h = opts.h ?? (params instanceof Float64Array ? 1e-6 : 1e-3);
  const indices = opts.indices ?? Array.from({ length: params.length }, (_, i) => i);
  const bad: string[] = [];
  let maxAbs = 0;
  for (const i of indices) {
    const p0 = params[i];
    params[i] = p0 + h;
    const up = params[i];
    const lUp = loss();
    params[i] = p0 - h;
    const down = params[i];
    const lDown = loss();
    params[i] = p0;
    const numeric = (lUp - lDown) / (up - down);
    const diff = Math.abs(analytic[i] - numeric);
    maxAbs = Math.max(maxAbs, diff);
    if (!(diff <= opts.atol + opts.rtol * Math.abs(numeric))) bad.push(`[${i}] analytic ${analytic[i]} numeric ${numeric}`);
  }
  if (bad.length)
    throw new Error(
      `${label}: ${bad.length} of ${indices.length} gradients off (atol ${opts.atol}, rtol ${opts.rtol}, max abs ${maxAbs.toExponential(3)}): ${bad.slice(0, 6).join('; ')}`,
    );
  return { maxAbs, checked: indices.length };
}

/**
 * The derivative along a random unit-variance direction v: analytic g . v against
 * (loss(p + h v) - loss(p - h v)) / 2h. Parameters must be f64 (an f32 array would round p + h v).
 */
export function checkDirectional(
  label: string,
  params: Float64Array,
  analytic: ArrayLike<number>,
  loss: () => number,
  rng: Rng,
  opts: { h?: number; atol: number; rtol: number },
): void {
  const h = opts.h ?? 1e-6;
  const v = Float64Array.from({ length: params.length }, () => rng.normal());
  const p0 = Float64Array.from(params);
  let want = 0;
  for (let i = 0; i < params.length; i++) want += analytic[i] * v[i];
  for (let i = 0; i < params.length; i++) params[i] = p0[i] + h * v[i];
  const lUp = loss();
  for (let i = 0; i < params.length; i++) params[i] = p0[i] - h * v[i];
  const lDown = loss();
  params.set(p0);
  const numeric = (lUp - lDown) / (2 * h);
  if (!(Math.abs(want - numeric) <= opts.atol + opts.rtol * Math.abs(numeric))) {
    throw new Error(`${label}: directional derivative ${want} (analytic) vs ${numeric} (numeric), atol ${opts.atol}, rtol ${opts.rtol}`);
  }
}

/** k distinct indices in [0, n), seeded (all of them when k >= n). */
export function sampleIndices(rng: Rng, n: number, k: number): number[] {
  if (k >= n) return Array.from({ length: n }, (_, i) => i);
  const chosen = new Set<number>();
  while (chosen.size < k) chosen.add(rng.int(n));
  return [...chosen].sort((a, b) => a - b);
}

/** sum_i w[i] * out[i]: a loss whose gradient with respect to `out` is w. */
export function weightedSum(out: ArrayLike<number>, w: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < out.length; i++) s += out[i] * w[i];
  return s;
}

/** n standard normals in f64. */
export function normals64(rng: Rng, n: number, scale = 1): Float64Array {
  return Float64Array.from({ length: n }, () => rng.normal() * scale);
}
