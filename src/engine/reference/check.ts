/**
 * Comparing GPU results with the reference (docs/style.md "For Hearth" 5): an element passes when
 * |got - want| <= atol + rtol * |want|. A failure names the max abs / rel difference, the first
 * mismatching indices and the first 5 pairs, so a broken kernel says where it broke.
 * Non-finite reference values must be matched exactly (same NaN / same infinity).
 */

export interface Tolerance {
  atol: number;
  rtol: number;
}

export interface Comparison {
  ok: boolean;
  maxAbs: number;
  maxRel: number;
  mismatches: number;
  report: string;
}

export function compareArrays(got: ArrayLike<number>, want: ArrayLike<number>, tol: Tolerance, label = 'values'): Comparison {
  const lines: string[] = [];
  if (got.length !== want.length) {
    return {
      ok: false,
      maxAbs: Infinity,
      maxRel: Infinity,
      mismatches: Math.max(got.length, want.length),
      report: `${label}: length ${got.length}, expected ${want.length}`,
    };
  }
  let maxAbs = 0;
  let maxRel = 0;
  let mismatches = 0;
  const first: string[] = [];
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    const w = want[i];
    let bad: boolean;
    if (!Number.isFinite(w)) {
      bad = !(Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w)));
    } else {
      const abs = Math.abs(g - w);
      const rel = abs / Math.max(Math.abs(w), 1e-30);
      if (!(abs <= maxAbs)) maxAbs = Number.isNaN(abs) ? Infinity : Math.max(maxAbs, abs);
      if (Math.abs(w) > tol.atol && rel > maxRel) maxRel = rel;
      bad = !(abs <= tol.atol + tol.rtol * Math.abs(w));
    }
    if (bad) {
      mismatches++;
      if (first.length < 10) first.push(`[${i}] got ${g} want ${w}`);
    }
  }
  const pairs = Array.from({ length: Math.min(5, want.length) }, (_, i) => `${got[i]} / ${want[i]}`).join(', ');
  lines.push(
    `${label}: ${mismatches} of ${want.length} outside atol ${tol.atol} + rtol ${tol.rtol}; max abs ${maxAbs.toExponential(3)}, max rel ${maxRel.toExponential(3)}`,
  );
  if (mismatches) lines.push(`  first mismatches: ${first.join('; ')}`);
  lines.push(`  first pairs (got / want): ${pairs}`);
  return { ok: mismatches === 0, maxAbs, maxRel, mismatches, report: lines.join('\n') };
}

/** Throws with the comparison report when any element is out of tolerance. */
export function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: Tolerance, label = 'values'): Comparison {
  const c = compareArrays(got, want, tol, label);
  if (!c.ok) throw new Error(c.report);
  return c;
}
