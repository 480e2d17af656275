/**
 * JSON-schema keywords and xgrammar, so that an accepted schema is always honoured:
 * - refused: the keywords xgrammar 0.1.27 skips silently (a walk through its grammar produced
 *   documents the schema rejects in Hearth's tests): vLLM's list (multipleOf; uniqueItems,
 *   contains, minContains, maxContains; string formats outside xgrammar's list; patternProperties,
 *   propertyNames) and also not, if / then / else, dependentRequired, dependentSchemas,
 *   dependencies, allOf with more than one schema, and property names holding a quote, a
 *   backslash or a control character (xgrammar writes them into the grammar unescaped).
 *   Grammar.fromJSONSchema in 0.1.27 accepts 4 for {type: integer, multipleOf: 3}, [1, 1] under
 *   uniqueItems, 7 for {type: integer, not: {minimum: 5}}, 1 for {if: {minimum: 0}, then:
 *   {minimum: 5}}, {"a": 1} under dependentRequired {a: [b]}, and any value for an allOf of two
 *   schemas; a property named `a"b` aborts it (fixed upstream after 0.1.27 by
 *   https://github.com/mlc-ai/xgrammar/pull/655); format json-pointer accepts "/a"b" and format
 *   email the invalid escape \q. vLLM's list follows vllm/v1/structured_output/backend_xgrammar.py
 *   (see https://github.com/vllm-project/vllm/pull/30390).
 *   Canaries: test/unit/structured/xgrammar-canaries.test.ts.
 * - rewritten: the nodes whose xgrammar grammar is unsound. Numeric bounds (numeric-ranges.ts:
 *   "1.4" for maximum 1, ...) and string patterns, lengths and the email format (xgrammar matches
 *   them against the raw JSON text, letting `.` write a bare quote or a tab). Each such node is
 *   swapped for a string constant the converter copies into its EBNF verbatim, which
 *   grammar-compiler.ts then replaces with Hearth's rule.
 * - disable_additional_properties: objects with properties and no additionalProperties get
 *   `additionalProperties: false` (vLLM's process_for_additional_properties).
 *
 * Not here: compiling (grammar-compiler.ts).
 * Reference: vLLM vllm/v1/structured_output/backend_xgrammar.py has_xgrammar_unsupported_json_features.
 */
import { ConstraintError } from './errors';
import { integerRangeEbnf, numberRangeEbnf, type NumericBounds } from './numeric-ranges';
import { jsonStringCharEbnf, RegexSyntaxError, regexToJsonStringEbnf } from './regex-ebnf';

type Json = Record<string, unknown>;

/**
 * String formats xgrammar writes a sound grammar for (their syntax: no calendar check for dates,
 * leading zeros allowed in ipv4). email is Hearth's own (xgrammar's allows invalid JSON escapes in
 * a quoted local part); json-pointer and relative-json-pointer are refused (xgrammar's allow bare
 * quotes and control characters).
 */
export const SUPPORTED_STRING_FORMATS = new Set([
  'email',
  'date',
  'time',
  'date-time',
  'duration',
  'ipv4',
  'ipv6',
  'hostname',
  'uuid',
  'uri',
  'uri-reference',
  'uri-template',
]);

/** Keywords xgrammar does not enforce. */
const UNENFORCED = [
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'multipleOf',
  'propertyNames',
  'patternProperties',
];

/** Keywords whose value maps names to schemas (their keys are names, not keywords). */
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties', 'dependentSchemas']);

/** Keywords whose value is data, not a schema. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON pointer of a path (RFC 6901). */
function pointer(path: readonly string[]): string {
  return '#' + path.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

/** Visits every schema node (objects under schema keywords), with its path; `visit` may return a replacement. */
function mapSchema(node: unknown, path: string[], visit: (node: Json, path: string[]) => Json): unknown {
  if (Array.isArray(node)) return node.map((x, i) => mapSchema(x, [...path, String(i)], visit));
  if (!isObject(node)) return node;
  const isNameMap = path.length > 0 && SCHEMA_MAPS.has(path[path.length - 1]);
  const out: Json = {};
  for (const [key, value] of Object.entries(node))
    out[key] = !isNameMap && DATA_KEYWORDS.has(key) ? value : mapSchema(value, [...path, key], visit);
  return isNameMap ? out : visit(out, path);
}

/** The first keyword xgrammar cannot enforce, as "multipleOf at #/properties/n", or null. */
export function unsupportedJsonSchemaFeature(schema: unknown): string | null {
  let found: string | null = null;
  mapSchema(schema, [], (node, path) => {
    if (found) return node;
    const keyword = UNENFORCED.find((k) => k in node);
    if (keyword) found = `${keyword} at ${pointer(path)}`;
    else if (Array.isArray(node.allOf) && node.allOf.length > 1) found = `allOf with more than one schema at ${pointer(path)}`;
    else if (node.type === 'string' && typeof node.format === 'string' && !SUPPORTED_STRING_FORMATS.has(node.format))
      found = `format "${node.format}" at ${pointer(path)}`;
    else if (isObject(node.properties)) {
      // xgrammar writes property names into its grammar unescaped.
      // oxlint-disable-next-line no-control-regex -- the control characters JSON strings must escape
      const name = Object.keys(node.properties).find((k) => /["\\\u0000-\u001f]/.test(k));
      if (name !== undefined)
        found = `a property name with a quote, backslash or control character (${JSON.stringify(name)}) at ${pointer(path)}`;
    }
    return node;
  });
  return found;
}

/** A copy where objects with properties and no additionalProperties get `additionalProperties: false`. */
export function withoutAdditionalProperties(schema: unknown): unknown {
  return mapSchema(schema, [], (node) => {
    if (!('additionalProperties' in node) && ('properties' in node || 'patternProperties' in node))
      return { ...node, additionalProperties: false };
    return node;
  });
}

/** A node Hearth writes the grammar of, replaced in the schema by `{"const": placeholder}`. */
export interface HearthRule {
  placeholder: string;
  /** EBNF rule name and body for the placeholder's place. */
  rule: string;
  ebnf: string;
}

const STRING_KEYWORDS = ['pattern', 'minLength', 'maxLength'] as const;

/** An email address without the quoted local part (whose backslash escapes are not JSON's). */
const EMAIL_PATTERN =
  "^[A-Za-z0-9_!#$%&'*+/=?^`{|}~-]+(\\.[A-Za-z0-9_!#$%&'*+/=?^`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$";

/** `"` + the JSON text of a string matching the pattern + `"`. */
function jsonStringEbnf(pattern: string, fail: (why: string) => never): string {
  try {
    return `"\\"" (${regexToJsonStringEbnf(pattern)}) "\\""`;
  } catch (e) {
    if (e instanceof RegexSyntaxError) fail(`a pattern Hearth cannot use (${e.message})`);
    throw e;
  }
}

/**
 * Replaces the nodes whose grammar Hearth writes itself by string constants, and returns those
 * grammars: integer and number nodes with bounds (numeric-ranges.ts); string nodes with a
 * pattern, a length bound, or the email format (regex-ebnf.ts, JSON-string mode).
 */
export function extractHearthRules(schema: unknown, nonce: string): { schema: unknown; rules: HearthRule[] } {
  const rules: HearthRule[] = [];
  const rewritten = mapSchema(schema, [], (node, path) => {
    const where = pointer(path);
    const fail = (why: string): never => {
      throw new ConstraintError(
        `The provided JSON schema contains features not supported by xgrammar: ${why} at ${where}.`,
        'structured_outputs',
      );
    };
    const ebnf = numericRule(node, where, fail) ?? stringRule(node, where, fail);
    if (ebnf === null) return node;
    const index = rules.length;
    const placeholder = `__hearth_rule_${nonce}_${index}__`;
    rules.push({ placeholder, rule: `hearth_rule_${index}`, ebnf });
    return { const: placeholder };
  });
  return { schema: rewritten, rules };
}

function numericRule(node: Json, where: string, fail: (why: string) => never): string | null {
  const present = BOUNDS.filter((k) => k in node);
  if (present.length === 0) return null;
  if (node.type !== 'integer' && node.type !== 'number') fail(`${present[0]} without "type": "integer" or "number"`);
  if ('enum' in node || 'const' in node) fail(`${present[0]} together with enum or const`);
  const b: NumericBounds = {};
  for (const key of BOUNDS) {
    const value = node[key];
    if (value === undefined) continue;
    // Draft 4 wrote exclusive bounds as booleans beside minimum / maximum.
    if (typeof value === 'boolean') continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${key} that is not a number`);
    b[key] = value;
  }
  if (node.exclusiveMinimum === true && b.minimum !== undefined) b.exclusiveMinimum = b.minimum;
  if (node.exclusiveMaximum === true && b.maximum !== undefined) b.exclusiveMaximum = b.maximum;
  const ebnf = node.type === 'integer' ? integerRangeEbnf(b) : numberRangeEbnf(b);
  if (ebnf !== null) return ebnf;
  throw new ConstraintError(
    node.type === 'integer'
      ? `The provided JSON schema allows no integer at ${where}: its bounds exclude every value.`
      : `The provided JSON schema's bounds at ${where} leave no number Hearth can generate (it needs an integer, or a fraction of at most 15 significant digits, inside them).`,
    'structured_outputs',
  );
}

function stringRule(node: Json, where: string, fail: (why: string) => never): string | null {
  const present = STRING_KEYWORDS.filter((k) => k in node);
  const email = node.type === 'string' && node.format === 'email';
  if (present.length === 0 && !email) return null;
  if (node.type !== 'string') fail(`${present[0]} without "type": "string"`);
  if ('enum' in node || 'const' in node) fail(`${present[0]} together with enum or const`);
  if (typeof node.format === 'string' && present.length > 0) fail(`format together with ${present[0]}`);
  if (email) return jsonStringEbnf(EMAIL_PATTERN, fail);
  if ('pattern' in node) {
    if (typeof node.pattern !== 'string') fail('a pattern that is not a string');
    if ('minLength' in node || 'maxLength' in node) fail('pattern together with minLength or maxLength');
    return jsonStringEbnf(node.pattern, fail);
  }
  const min = node.minLength ?? 0;
  const max = node.maxLength;
  if (!Number.isInteger(min) || (min as number) < 0 || (max !== undefined && (!Number.isInteger(max) || (max as number) < 0)))
    fail('minLength / maxLength that are not non-negative integers');
  if (max !== undefined && (max as number) < (min as number)) {
    throw new ConstraintError(`The provided JSON schema allows no string at ${where}: minLength is above maxLength.`, 'structured_outputs');
  }
  // One character of the decoded string: a plain character or a one-character escape.
  return `"\\"" ${jsonStringCharEbnf()}{${min},${max ?? ''}} "\\""`;
}
