/**
 * pydantic's lax mode as zod schemas, for the chat request (vLLM's tests rely on it): booleans
 * from "true"/"false"/"yes"/"no"/"on"/"off"/"1"/"0" and 0/1; integers from "5", 5.0 and true
 * (5.5 is refused); numbers from numeric strings. `null` reads as "not given" where vLLM's field
 * is Optional, and is refused where it is not. Failures carry pydantic's error type and message
 * (`params.type`), which the error envelope repeats.
 *
 * Not here: the request's fields (chat-request.ts).
 * Reference: pydantic v2 "Conversion Table" (lax mode) and error types bool_parsing, int_parsing,
 * int_from_float, float_parsing, greater_than_equal, less_than_equal.
 */
import { z } from 'zod';

type Fail = (type: string, message: string, ctx?: Record<string, unknown>) => never;

const FAILED = Symbol('failed');

function run<T>(parse: (value: unknown, fail: Fail) => T, value: unknown, ctx: z.RefinementCtx): T {
  const fail: Fail = (type, message, extra = {}) => {
    ctx.addIssue({ code: 'custom', message, params: { type, ctx: extra } });
    throw FAILED;
  };
  try {
    return parse(value, fail);
  } catch (e) {
    if (e === FAILED) return z.NEVER;
    throw e;
  }
}

/** A field from a lax parser: absent stays undefined; `nullable` turns null into undefined too. */
function lax<T>(parse: (value: unknown, fail: Fail) => T, nullable: boolean) {
  return z
    .unknown()
    .transform((value, ctx): T | undefined => {
      if (value === undefined || (value === null && nullable)) return undefined;
      return run(parse, value, ctx);
    })
    .optional();
}

/** A list item or map value from a lax parser (always present). */
function item<T>(parse: (value: unknown, fail: Fail) => T) {
  return z.unknown().transform((value, ctx): T => run(parse, value, ctx));
}

const TRUE = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

function parseBool(v: unknown, fail: Fail): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number' && (v === 0 || v === 1)) return v === 1;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (TRUE.has(s)) return true;
    if (FALSE.has(s)) return false;
    return fail('bool_parsing', 'Input should be a valid boolean, unable to interpret input');
  }
  if (typeof v === 'number') return fail('bool_parsing', 'Input should be a valid boolean, unable to interpret input');
  return fail('bool_type', 'Input should be a valid boolean');
}

const INT_TEXT = /^[+-]?\d+(_\d+)*$/;

function parseBigInt(v: unknown, fail: Fail): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return fail('finite_number', 'Input should be a finite number');
    if (!Number.isInteger(v)) return fail('int_from_float', 'Input should be a valid integer, got a number with a fractional part');
    return BigInt(v);
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (!INT_TEXT.test(s)) return fail('int_parsing', 'Input should be a valid integer, unable to parse string as an integer');
    return BigInt(s.replaceAll('_', ''));
  }
  return fail('int_type', 'Input should be a valid integer');
}

interface IntBounds {
  ge?: bigint;
  le?: bigint;
}

function checkBounds(n: bigint, b: IntBounds, fail: Fail): void {
  if (b.ge !== undefined && n < b.ge) fail('greater_than_equal', `Input should be greater than or equal to ${b.ge}`, { ge: b.ge });
  if (b.le !== undefined && n > b.le) fail('less_than_equal', `Input should be less than or equal to ${b.le}`, { le: b.le });
}

/** A boolean field; `nullable` for vLLM's `Optional[bool]`. */
export const laxBool = (nullable = true) => lax(parseBool, nullable);

function parseSafeInt(v: unknown, fail: Fail, bounds: IntBounds = {}): number {
  const n = parseBigInt(v, fail);
  checkBounds(n, bounds, fail);
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) {
    return fail('int_too_large', 'Input integer is too large for this field');
  }
  return Number(n);
}

/** An integer field (a JS number: within ±2^53, which every count and token id is). */
export const laxInt = (nullable = true, bounds: IntBounds = {}) => lax((v, fail) => parseSafeInt(v, fail, bounds), nullable);

/** An integer list item. */
export const laxIntItem = () => item((v, fail) => parseSafeInt(v, fail));

/** An integer field kept exact to 64 bits (the seed). */
export const laxBigInt = (nullable = true, bounds: IntBounds = {}) =>
  lax((v, fail) => {
    const n = parseBigInt(v, fail);
    checkBounds(n, bounds, fail);
    return n;
  }, nullable);

const FLOAT_TEXT = /^[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i;

function parseNumber(v: unknown, fail: Fail): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const s = v.trim();
    if (!FLOAT_TEXT.test(s)) return fail('float_parsing', 'Input should be a valid number, unable to parse string as a number');
    const lower = s.toLowerCase().replace(/^\+/, '');
    if (lower.endsWith('nan')) return NaN;
    if (lower.endsWith('inf') || lower.endsWith('infinity')) return lower.startsWith('-') ? -Infinity : Infinity;
    return Number(s.replaceAll('_', ''));
  }
  return fail('float_type', 'Input should be a valid number');
}

/** A float field. */
export const laxFloat = (nullable = true) => lax(parseNumber, nullable);

/** A float map value. */
export const laxFloatItem = () => item(parseNumber);

/** A string field (pydantic does not turn numbers into strings). */
export const laxStr = (nullable = true) =>
  lax((v, fail): string => (typeof v === 'string' ? v : fail('string_type', 'Input should be a valid string')), nullable);

/** Wraps any schema so that null reads as "not given" (vLLM's Optional fields). */
export function optional<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => (v === null ? undefined : v) as Exclude<z.output<T>, null> | undefined);
}
