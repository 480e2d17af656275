/**
 * Lists and dicts in request schemas, each with a cap on its length (issue 26): a list is refused
 * from its length before any item is parsed, and reports at most MAX_LIST_ISSUES failing items
 * (each with at most MAX_LIST_ISSUES issues), then stops. Without this a 5 M-entry
 * `allowed_token_ids` took 18 s of the one engine thread, and a list of a few hundred thousand bad
 * items overflowed the stack (zod gathers a field's issues with `push(...issues)`), a 500.
 *
 * Not here: what an issue becomes in a response (../validation.ts, which also reports at most
 * MAX_REPORTED_ISSUES of them).
 */
import { z } from 'zod';

/** Failing items one list reports before it stops looking. */
export const MAX_LIST_ISSUES = 20;

/** A list or dict over its cap: the issue ../validation.ts answers as pydantic's `too_long`. */
function tooLong(ctx: z.RefinementCtx, input: unknown, origin: 'array' | 'object', max: number): void {
  ctx.addIssue({ code: 'too_big', origin, maximum: max, inclusive: true, input, message: `${origin} over ${max}` });
}

/**
 * Parses `entries` (key or index, value) with `schema`, one by one, into `put`; after
 * MAX_LIST_ISSUES failing entries the rest is not looked at. Whether any failed.
 */
function parseEntries<T extends z.ZodType>(
  schema: T,
  entries: Iterable<[string | number, unknown]>,
  ctx: z.RefinementCtx,
  put: (key: string | number, value: z.output<T>) => void,
): boolean {
  let failed = 0;
  for (const [key, value] of entries) {
    const r = schema.safeParse(value);
    if (r.success) {
      put(key, r.data);
      continue;
    }
    for (const issue of r.error.issues.slice(0, MAX_LIST_ISSUES)) {
      ctx.addIssue({ ...(issue as object), path: [key, ...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    }
    if (++failed === MAX_LIST_ISSUES) break;
  }
  return failed > 0;
}

/** A list of `item` with `min` to `max` entries, parsed item by item (see parseEntries). */
export function list<T extends z.ZodType>(item: T, max: number, min = 0) {
  return z
    .array(z.unknown())
    .min(min)
    .max(max)
    .transform((items, ctx) => {
      const out = new Array<z.output<T>>(items.length);
      return parseEntries(item, items.entries(), ctx, (i, v) => (out[i as number] = v)) ? z.NEVER : out;
    });
}

/** How many own keys `v` has, counting no further than `max + 1`. */
function keysOver(v: object, max: number): boolean {
  let n = 0;
  for (const key in v) if (Object.hasOwn(v, key) && ++n > max) return true;
  return false;
}

/**
 * `schema` (a record or a union holding lists) refused first by size: a dict with more than `max`
 * keys, or a list with more than `max` items, is `too_long` before `schema` looks at any entry.
 */
export function capped<T extends z.ZodType>(schema: T, max: number) {
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (Array.isArray(v)) {
        if (v.length > max) tooLong(ctx, v, 'array', max);
      } else if (v !== null && typeof v === 'object' && keysOver(v, max)) {
        tooLong(ctx, v, 'object', max);
      }
    })
    .pipe(schema);
}

/** A JSON object (a dict of any values) of at most `max` keys. */
export const dict = (max: number) => capped(z.record(z.string(), z.unknown()), max);

/** A dict of at most `max` keys whose values are `value`, parsed entry by entry (see parseEntries). */
export function dictOf<T extends z.ZodType>(value: T, max: number) {
  return dict(max).transform((obj, ctx) => {
    // Pairs, then fromEntries: a "__proto__" key stays a key (an assignment would set the prototype).
    const out: [string, z.output<T>][] = [];
    return parseEntries(value, Object.entries(obj), ctx, (k, v) => out.push([k as string, v])) ? z.NEVER : Object.fromEntries(out);
  });
}
