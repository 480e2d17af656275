/**
 * EBNF for JSON numbers within bounds (a schema's minimum / maximum / exclusiveMinimum /
 * exclusiveMaximum), written by Hearth because the range grammars of xgrammar 0.1.27's JSON-schema
 * converter are unsound. Grammar.fromJSONSchema accepts:
 * - "1" for {type: number, exclusiveMaximum: 1}: exclusive bounds are compiled as inclusive;
 * - "10{5" for {type: number, minimum: 10.5}: the dot of a fractional bound matches any character;
 * - a bare "-" for {type: integer, minimum: -5}: the negative side of the range is empty;
 * - "1.4" for {type: number, minimum: 0, maximum: 1}: any fraction after the maximum's integer part.
 * Upstream: https://github.com/mlc-ai/xgrammar/pull/661 (a proposed fix for these, not in 0.1.27).
 * Canary: test/unit/structured/xgrammar-canaries.test.ts fails when an upgrade fixes them.
 *
 * The grammars are sound: every text they accept is a JSON number whose double value (as a JSON
 * parser reads it) is inside the bounds. For integers they are complete. For numbers they leave
 * out exponents and, next to a fractional bound, fractions of more than 15 significant digits
 * (where a decimal can round onto the bound); between two bounds inside one unit interval (0.2 to
 * 0.7) only the integers are generated.
 *
 * A number is a sign, a magnitude and a rule per side: the non-negative side is the magnitudes in
 * [max(lo, 0), hi], the negative side the magnitudes in (max(0, -hi), -lo]. Within a side a
 * magnitude is an integer in range, or an integer part I with any fraction when the whole
 * interval [I, I + 1) is inside, or, at a bound that is not an integer (or is exclusive), the
 * integer part next to it with a fraction compared digit by digit with the bound's.
 *
 * Not here: finding the bounded nodes of a schema (json-schema-support.ts).
 */

/** JSON-schema numeric bounds (draft 6+ form: exclusive bounds are numbers). */
export interface NumericBounds {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

/** A bound on a magnitude, as an exact decimal: integer part, fraction digits (no trailing zeros). */
interface Bound {
  int: bigint;
  frac: string;
  exclusive: boolean;
  /** Significant digits of the decimal (the shortest text of the double). */
  digits: number;
}

const DIGIT = '[0-9]';
/** Decimal texts of up to 15 significant digits are told apart by their doubles (DBL_DIG). */
const SAFE_DIGITS = 15;

function digitClass(a: number, b: number): string {
  return a === b ? `"${a}"` : `[${a}-${b}]`;
}

function digits(n: number): string {
  return n === 0 ? '' : n === 1 ? DIGIT : `${DIGIT}{${n}}`;
}

function group(alts: readonly string[]): string {
  return alts.length === 1 ? alts[0] : `(${alts.map((a) => `(${a})`).join(' | ')})`;
}

/** Alternatives for the width-n digit strings from a to b (a <= b, leading zeros allowed). */
function fixedWidth(a: string, b: string): string[] {
  if (a === b) return [`"${a}"`];
  if (a.length === 1) return [digitClass(Number(a), Number(b))];
  const [a0, b0] = [Number(a[0]), Number(b[0])];
  const [restA, restB] = [a.slice(1), b.slice(1)];
  if (a0 === b0) return fixedWidth(restA, restB).map((x) => `"${a0}" (${x})`);
  if (/^0*$/.test(restA) && /^9*$/.test(restB)) return [`${digitClass(a0, b0)} ${digits(a.length - 1)}`];
  const out = fixedWidth(restA, '9'.repeat(restA.length)).map((x) => `"${a0}" (${x})`);
  if (a0 + 1 <= b0 - 1) out.push(`${digitClass(a0 + 1, b0 - 1)} ${digits(a.length - 1)}`);
  out.push(...fixedWidth('0'.repeat(restB.length), restB).map((x) => `"${b0}" (${x})`));
  return out;
}

/** Alternatives for the texts (no sign, no leading zero) of the integers in [lo, hi]; hi null: unbounded. */
export function unsignedRange(lo: bigint, hi: bigint | null): string[] {
  if (lo < 0n) lo = 0n;
  if (hi !== null && hi < lo) return [];
  const loText = lo.toString();
  const lastWidth = hi === null ? loText.length : hi.toString().length;
  const out: string[] = [];
  for (let n = loText.length; n <= lastWidth; n++) {
    const a = n === loText.length ? loText : '1' + '0'.repeat(n - 1);
    const b = hi !== null && n === lastWidth ? hi.toString() : '9'.repeat(n);
    out.push(...fixedWidth(a, b));
  }
  if (hi === null) out.push(`[1-9] ${DIGIT}{${loText.length},}`);
  return out;
}

/** Fraction digit strings f (1 to maxLen digits) with 0.f above 0.d (or equal when inclusive). */
function fractionsAbove(d: string, inclusive: boolean, maxLen: number): string[] {
  const out: string[] = [];
  for (let k = 0; k < d.length && k < maxLen; k++) {
    const digit = Number(d[k]);
    if (digit < 9)
      out.push(`${k > 0 ? `"${d.slice(0, k)}" ` : ''}${digitClass(digit + 1, 9)}${k + 1 < maxLen ? ` ${DIGIT}{0,${maxLen - k - 1}}` : ''}`);
  }
  // d followed by more digits ending in a non-zero one (trailing zeros add no value).
  const room = maxLen - d.length;
  if (room >= 1) out.push(`${d ? `"${d}" ` : ''}${room > 1 ? `${DIGIT}{0,${room - 1}} ` : ''}[1-9]`);
  if (inclusive && d !== '' && d.length <= maxLen) out.push(`"${d}"`);
  return out;
}

/** Fraction digit strings f (1 to maxLen digits) with 0.f below 0.d (or equal when inclusive); d "" stands for 1. */
function fractionsBelow(d: string, inclusive: boolean, maxLen: number): string[] {
  if (d === '') return [`${DIGIT}{1,${maxLen}}`];
  const out: string[] = [];
  for (let k = 0; k < d.length && k < maxLen; k++) {
    const digit = Number(d[k]);
    if (digit > 0)
      out.push(`${k > 0 ? `"${d.slice(0, k)}" ` : ''}${digitClass(0, digit - 1)}${k + 1 < maxLen ? ` ${DIGIT}{0,${maxLen - k - 1}}` : ''}`);
    // A proper prefix of d is below it (d has no trailing zeros).
    if (k >= 1) out.push(`"${d.slice(0, k)}"`);
  }
  if (inclusive && d.length <= maxLen) out.push(`"${d}"`);
  return out;
}

/**
 * Fraction digit strings f (1 to maxLen digits) with 0.lo < 0.f < 0.hi (either end inclusive on
 * request); 0.lo < 0.hi, hi not empty. Both bounds cut one unit interval.
 */
function fractionsBetween(lo: string, loInclusive: boolean, hi: string, hiInclusive: boolean, maxLen: number): string[] {
  let k = 0;
  while (k < lo.length && k < hi.length && lo[k] === hi[k]) k++;
  if (k >= maxLen) return [];
  const prefix = hi.slice(0, k);
  const quote = (t: string) => (t ? `"${t}" ` : '');
  const out: string[] = [];
  if (prefix !== '' && lo.length === k && loInclusive) out.push(`"${prefix}"`);
  const a = lo.length > k ? Number(lo[k]) : 0;
  const b = Number(hi[k]);
  const room = maxLen - k - 1;
  const loRest = lo.slice(k + 1);
  const hiRest = hi.slice(k + 1);
  // Digit a, then a tail above the rest of lo (a alone when that is lo itself and it counts).
  if (lo.length > k) {
    if (loRest === '' && loInclusive) out.push(`${quote(prefix)}"${a}"`);
    if (room >= 1) for (const tail of fractionsAbove(loRest, loInclusive, room)) out.push(`${quote(prefix)}"${a}" ${tail}`);
  } else if (room >= 1) {
    // lo ends here: after a 0 digit, any tail with a non-zero digit.
    for (const tail of fractionsAbove('', false, room)) out.push(`${quote(prefix)}"0" ${tail}`);
  }
  // A digit strictly between, then anything.
  if (a + 1 <= b - 1) out.push(`${quote(prefix)}${digitClass(a + 1, b - 1)}${room >= 1 ? ` ${DIGIT}{0,${room}}` : ''}`);
  // Digit b, then a tail below the rest of hi (b alone when hi goes on, or is b and counts).
  if (hiRest !== '' || hiInclusive) out.push(`${quote(prefix)}"${b}"`);
  if (hiRest !== '' && room >= 1) for (const tail of fractionsBelow(hiRest, hiInclusive, room)) out.push(`${quote(prefix)}"${b}" ${tail}`);
  return out;
}

/** The exact shortest decimal of a finite double's magnitude. */
function decimalOf(x: number, exclusive: boolean): Bound {
  const [mantissa, exp] = Math.abs(x).toExponential().split('e');
  const sig = mantissa.replace('.', '');
  const e = Number(exp);
  let intPart: string;
  let frac: string;
  if (e >= 0) {
    intPart = sig.length > e + 1 ? sig.slice(0, e + 1) : sig + '0'.repeat(e + 1 - sig.length);
    frac = sig.slice(e + 1);
  } else {
    intPart = '0';
    frac = '0'.repeat(-e - 1) + sig;
  }
  return { int: BigInt(intPart), frac: frac.replace(/0+$/, ''), exclusive, digits: sig.replace(/0+$/, '').length || 1 };
}

const ZERO: Bound = { int: 0n, frac: '', exclusive: false, digits: 1 };

function isBelow(a: Bound, b: Bound): boolean {
  return a.int < b.int || (a.int === b.int && a.frac.padEnd(b.frac.length, '0') < b.frac.padEnd(a.frac.length, '0'));
}

/** The tighter of two lower bounds (the larger; exclusive on a tie). */
function tighterLower(a: Bound, b: Bound): Bound {
  if (isBelow(a, b)) return b;
  if (isBelow(b, a)) return a;
  return { ...a, exclusive: a.exclusive || b.exclusive };
}

/** Alternatives for the magnitude texts (digits, optional fraction) within [lower, upper]. */
function magnitudes(lower: Bound, upper: Bound | null, integersOnly: boolean): string[] {
  // The smallest and largest integers inside.
  const firstInt = lower.frac !== '' || lower.exclusive ? lower.int + 1n : lower.int;
  const lastInt = upper === null ? null : upper.frac === '' && upper.exclusive ? upper.int - 1n : upper.int;
  const out = unsignedRange(firstInt, lastInt);
  if (integersOnly) return out;
  // Whole unit intervals [I, I + 1): I and I + 1 both inside (a long fraction may round to I + 1).
  const whole = unsignedRange(firstInt, lastInt === null ? null : lastInt - 1n);
  if (whole.length > 0) out.push(`${group(whole)} "." ${DIGIT}+`);
  const upperIsOpenInteger = upper !== null && upper.frac === '' && upper.exclusive;
  // Both bounds inside one unit interval (0.2 to 0.7): fractions between theirs.
  if (upper !== null && (lower.frac !== '' || lower.exclusive) && upper.frac !== '' && lower.int === upper.int) {
    const room = SAFE_DIGITS - lower.int.toString().length;
    if (room >= 1 && lower.digits <= SAFE_DIGITS && upper.digits <= SAFE_DIGITS) {
      const alts = fractionsBetween(lower.frac, !lower.exclusive, upper.frac, !upper.exclusive, room);
      if (alts.length > 0) out.push(`"${lower.int}" "." ${group(alts)}`);
    }
    return out;
  }
  // The unit interval a fractional or exclusive lower bound cuts: I0 = its integer part, fractions
  // above its own; the interval must end inside the upper bound.
  if (lower.frac !== '' || lower.exclusive) {
    const i0 = lower.int;
    const endsInside = lastInt === null || i0 + 1n <= lastInt || (upperIsOpenInteger && upper.int === i0 + 1n);
    const room = SAFE_DIGITS - i0.toString().length;
    if (endsInside && room >= 1 && lower.digits <= SAFE_DIGITS) {
      const alts = fractionsAbove(lower.frac, !lower.exclusive, room);
      if (alts.length > 0) out.push(`"${i0}" "." ${group(alts)}`);
    }
  }
  // The unit interval a fractional or exclusive integer upper bound cuts: fractions below its own
  // (any fraction below an exclusive integer); the interval must start inside the lower bound.
  if (upper !== null && (upper.frac !== '' || upper.exclusive)) {
    const i1 = upper.frac === '' ? upper.int - 1n : upper.int;
    const room = SAFE_DIGITS - i1.toString().length;
    if (i1 >= firstInt && room >= 1 && upper.digits <= SAFE_DIGITS) {
      const alts = fractionsBelow(upper.frac, !upper.exclusive, room);
      if (alts.length > 0) out.push(`"${i1}" "." ${group(alts)}`);
    }
  }
  return out;
}

/** The [lower, upper] bounds of the non-negative side and of the negative side's magnitudes. */
function sides(b: NumericBounds): { positive: [Bound, Bound | null] | null; negative: [Bound, Bound | null] | null } {
  const lows: { value: number; exclusive: boolean }[] = [];
  const highs: { value: number; exclusive: boolean }[] = [];
  if (b.minimum !== undefined) lows.push({ value: b.minimum, exclusive: false });
  if (b.exclusiveMinimum !== undefined) lows.push({ value: b.exclusiveMinimum, exclusive: true });
  if (b.maximum !== undefined) highs.push({ value: b.maximum, exclusive: false });
  if (b.exclusiveMaximum !== undefined) highs.push({ value: b.exclusiveMaximum, exclusive: true });
  const pick = (list: typeof lows, better: (a: number, b: number) => boolean) =>
    list.reduce<(typeof lows)[number] | null>(
      (acc, x) => (acc === null || better(x.value, acc.value) || (x.value === acc.value && x.exclusive) ? x : acc),
      null,
    );
  const lo = pick(lows, (a, c) => a > c);
  const hi = pick(highs, (a, c) => a < c);

  // Non-negative values: magnitude in [max(lo, 0), hi]; none when hi < 0 (or hi = 0 exclusive).
  let positive: [Bound, Bound | null] | null = null;
  if (hi === null || hi.value > 0 || (hi.value === 0 && !hi.exclusive)) {
    const lower = lo === null || lo.value < 0 ? ZERO : decimalOf(lo.value, lo.exclusive);
    positive = [lower, hi === null ? null : decimalOf(hi.value, hi.exclusive)];
  }
  // Negative values: magnitude in (max(0, -hi), -lo]; none when lo >= 0.
  let negative: [Bound, Bound | null] | null = null;
  if (lo === null || lo.value < 0) {
    const zeroExclusive = { ...ZERO, exclusive: true };
    const lower = hi === null || hi.value >= 0 ? zeroExclusive : tighterLower(zeroExclusive, decimalOf(-hi.value, hi.exclusive));
    negative = [lower, lo === null ? null : decimalOf(-lo.value, lo.exclusive)];
  }
  return { positive, negative };
}

function rangeEbnf(b: NumericBounds, integersOnly: boolean): string | null {
  const { positive, negative } = sides(b);
  const alts: string[] = [];
  if (positive) alts.push(...magnitudes(positive[0], positive[1], integersOnly));
  if (negative) {
    const neg = magnitudes(negative[0], negative[1], integersOnly);
    if (neg.length > 0) alts.push(`"-" ${group(neg)}`);
  }
  return alts.length === 0 ? null : group(alts);
}

/** An EBNF body matching exactly the JSON integers within the bounds, or null when there are none. */
export function integerRangeEbnf(b: NumericBounds): string | null {
  return rangeEbnf(b, true);
}

/** An EBNF body matching JSON numbers within the bounds (see the header), or null when it finds none. */
export function numberRangeEbnf(b: NumericBounds): string | null {
  return rangeEbnf(b, false);
}
