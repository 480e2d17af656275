/**
 * Request validation for /v1/preview: turns zod issues into FastAPI's detail items, answered as
 * the 422 body `{"detail": [{"type", "loc", "msg", "input", "ctx"}]}` (the body ART's client and
 * the specification expect).
 *
 * Not here: the schemas (./schemas), the envelopes (service/error-envelope.ts), refusals before
 * the schema runs (body-type.ts).
 * Reference: pydantic v2 error types (missing, string_type, int_parsing, literal_error, ...).
 */
import { zValidator } from '@hono/zod-validator';
import type { ZodType, core } from 'zod';
import type { ValidationDetail } from '../service/error-envelope';
import { validationResponse } from './errors';

export type Loc = (string | number)[];

/** Where a validated value came from, as FastAPI names it in `loc`. */
export type Target = 'body' | 'query' | 'path';

function typeName(expected: string): string {
  switch (expected) {
    case 'string':
      return 'string_type';
    case 'number':
      return 'float_type';
    case 'int':
      return 'int_type';
    case 'boolean':
      return 'bool_type';
    case 'array':
      return 'list_type';
    case 'object':
    case 'record':
      return 'dict_type';
    default:
      return `${expected}_type`;
  }
}

function describe(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : JSON.stringify(v);
}

/** Walks `path` in `data`: the offending value, or the parent object when a field is missing. */
function locate(data: unknown, path: PropertyKey[]): { value: unknown; missing: boolean } {
  let node: unknown = data;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || !(String(key) in node)) {
      return { value: node, missing: true };
    }
    node = (node as Record<string, unknown>)[key as string];
  }
  return { value: node, missing: false };
}

/** pydantic's length refusals by zod origin: the error types (too short, too long) and the words of the message. */
const LENGTHS: Partial<Record<string, { short: string; long: string; what: string; unit: string }>> = {
  string: { short: 'string_too_short', long: 'string_too_long', what: 'String', unit: 'character' },
  array: { short: 'too_short', long: 'too_long', what: 'List', unit: 'item' },
  object: { short: 'too_short', long: 'too_long', what: 'Dictionary', unit: 'item' },
};

/** Most validation issues one response reports (issue 26): a body of a million bad items gets 20. */
export const MAX_REPORTED_ISSUES = 20;
/** What an echoed `input` keeps: items of a list, keys of a dict, characters of a string, levels. */
const ECHO_ITEMS = 32;
const ECHO_CHARS = 1024;
const ECHO_DEPTH = 8;

/**
 * The `input` an issue echoes, cut to a readable size (issue 26): a 5 M-entry list, a 30 MB
 * string or (for a missing field) the whole body is not sent back. Small values stay as they are.
 */
export function echoInput(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > ECHO_CHARS ? `${value.slice(0, ECHO_CHARS)}...` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= ECHO_DEPTH) return '...';
  if (Array.isArray(value)) {
    const kept = value.slice(0, ECHO_ITEMS).map((v) => echoInput(v, depth + 1));
    return value.length > ECHO_ITEMS ? [...kept, '...'] : kept;
  }
  const out: [string, unknown][] = [];
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (out.length === ECHO_ITEMS) {
      out.push(['...', '...']);
      break;
    }
    out.push([key, echoInput((value as Record<string, unknown>)[key], depth + 1)]);
  }
  return Object.fromEntries(out);
}

/** One zod issue as one FastAPI detail item. */
export function issueToDetail(issue: core.$ZodIssue, data: unknown, target: Target): ValidationDetail {
  const at = locate(data, issue.path);
  const loc: Loc = [target, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))];
  const input = echoInput(at.value);
  const params = (issue as { params?: { type?: string; ctx?: Record<string, unknown> } }).params;
  if (params?.type) return { type: params.type, loc, msg: issue.message, input, ctx: params.ctx ?? {} };
  switch (issue.code) {
    case 'invalid_type':
      if (at.missing || input === undefined) return { type: 'missing', loc, msg: 'Field required', input, ctx: {} };
      return { type: typeName(issue.expected), loc, msg: `Input should be a valid ${issue.expected}`, input, ctx: {} };
    case 'too_small': {
      const min = Number(issue.minimum);
      const len = LENGTHS[issue.origin];
      if (len) {
        const msg = `${len.what} should have at least ${min} ${len.unit}${min === 1 ? '' : 's'}`;
        return { type: len.short, loc, msg, input, ctx: { min_length: min } };
      }
      return issue.inclusive
        ? { type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${min}`, input, ctx: { ge: min } }
        : { type: 'greater_than', loc, msg: `Input should be greater than ${min}`, input, ctx: { gt: min } };
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      const len = LENGTHS[issue.origin];
      if (len) return { type: len.long, loc, msg: `${len.what} should have at most ${max} ${len.unit}s`, input, ctx: { max_length: max } };
      return issue.inclusive
        ? { type: 'less_than_equal', loc, msg: `Input should be less than or equal to ${max}`, input, ctx: { le: max } }
        : { type: 'less_than', loc, msg: `Input should be less than ${max}`, input, ctx: { lt: max } };
    }
    case 'invalid_value': {
      const expected = issue.values
        .map(describe)
        .join(', ')
        .replace(/, ([^,]*)$/, ' or $1');
      return { type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } };
    }
    case 'invalid_format':
      if (issue.format === 'uuid') return { type: 'uuid_parsing', loc, msg: 'Input should be a valid UUID', input, ctx: {} };
      if (issue.format === 'regex')
        return {
          type: 'string_pattern_mismatch',
          loc,
          msg: `String should match pattern '${issue.pattern}'`,
          input,
          ctx: { pattern: issue.pattern },
        };
      return { type: 'value_error', loc, msg: `Input should be a valid ${issue.format}`, input, ctx: { format: issue.format } };
    case 'unrecognized_keys':
      // FastAPI reports one extra_forbidden item per unknown key, located at the key itself.
      return {
        type: 'extra_forbidden',
        loc: [...loc, issue.keys[0]],
        msg: 'Extra inputs are not permitted',
        input: echoInput((at.value as Record<string, unknown> | undefined)?.[issue.keys[0]]),
        ctx: {},
      };
    case 'invalid_union':
      return { type: 'union_error', loc, msg: 'Input does not match any of the allowed shapes', input, ctx: {} };
    default:
      return { type: 'value_error', loc, msg: issue.message, input, ctx: {} };
  }
}

/** The first MAX_REPORTED_ISSUES issues as detail items (an unknown key is an item of its own). */
export function issuesToDetails(issues: readonly core.$ZodIssue[], data: unknown, target: Target): ValidationDetail[] {
  const details: ValidationDetail[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys.slice(0, MAX_REPORTED_ISSUES - details.length)) {
        details.push(issueToDetail({ ...issue, keys: [key] }, data, target));
      }
    } else {
      details.push(issueToDetail(issue, data, target));
    }
    if (details.length >= MAX_REPORTED_ISSUES) break;
  }
  return details;
}

const TARGETS = { json: 'body', query: 'query', param: 'path' } as const;

/** zValidator with the /v1/preview 422 envelope. */
export function previewValidator<T extends ZodType, K extends keyof typeof TARGETS>(target: K, schema: T) {
  return zValidator(target, schema, (result, c) => {
    if (!result.success) {
      return validationResponse(c, issuesToDetails(result.error.issues, result.data, TARGETS[target]));
    }
  });
}
