/**
 * JSON-schema keywords and xgrammar, so that an accepted schema is always honoured:
 * - refused: the keywords xgrammar 0.1.27 skips silently (a walk through its grammar produced
 *   documents the schema rejects in Hearth's tests): vLLM's list (multipleOf; uniqueItems,
 *   contains, minContains, maxContains; string formats outside xgrammar's list; propertyNames)
 *   and also not, if / then / else, dependentRequired, dependentSchemas, dependencies, and
 *   allOf with more than one schema. (vLLM also refuses patternProperties, which xgrammar now
 *   honours.)
 * - rewritten: numeric bounds. xgrammar's range grammars are unsound (numeric-ranges.ts), so each
 *   bounded integer or number node is swapped for a string constant the converter copies into
 *   its EBNF verbatim, which grammar-compiler.ts then replaces with Hearth's range rule.
 * - disable_additional_properties: objects with properties and no additionalProperties get
 *   `additionalProperties: false` (vLLM's process_for_additional_properties).
 *
 * Not here: compiling (grammar-compiler.ts).
 * Reference: vLLM vllm/v1/structured_output/backend_xgrammar.py has_xgrammar_unsupported_json_features.
 */
import { ConstraintError } from './errors';
import { integerRangeEbnf, numberRangeEbnf, type NumericBounds } from './numeric-ranges';

type Json = Record<string, unknown>;

/** String formats xgrammar writes a grammar for (their syntax; e.g. no calendar check for dates). */
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
  'json-pointer',
  'relative-json-pointer',
]);

/** Keywords xgrammar does not enforce. */
const UNENFORCED = ['not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas', 'dependencies', 'contains', 'minContains', 'maxContains', 'uniqueItems', 'multipleOf', 'propertyNames'];

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
  for (const [key, value] of Object.entries(node)) out[key] = !isNameMap && DATA_KEYWORDS.has(key) ? value : mapSchema(value, [...path, key], visit);
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
    else if (node.type === 'string' && typeof node.format === 'string' && !SUPPORTED_STRING_FORMATS.has(node.format)) found = `format "${node.format}" at ${pointer(path)}`;
    return node;
  });
  return found;
}

/** A copy where objects with properties and no additionalProperties get `additionalProperties: false`. */
export function withoutAdditionalProperties(schema: unknown): unknown {
  return mapSchema(schema, [], (node) => {
    if (!('additionalProperties' in node) && ('properties' in node || 'patternProperties' in node)) return { ...node, additionalProperties: false };
    return node;
  });
}

/** A bounded numeric node, replaced in the schema by `{"const": placeholder}`. */
export interface NumericRange {
  placeholder: string;
  /** EBNF rule name and body for the placeholder's place. */
  rule: string;
  ebnf: string;
}

/**
 * Replaces every integer or number node with bounds by a string constant (`placeholder`) and
 * returns the EBNF of its range. Bounds on a node that is not one numeric type are refused.
 */
export function extractNumericRanges(schema: unknown, nonce: string): { schema: unknown; ranges: NumericRange[] } {
  const ranges: NumericRange[] = [];
  const rewritten = mapSchema(schema, [], (node, path) => {
    const present = BOUNDS.filter((k) => k in node);
    if (present.length === 0) return node;
    const where = pointer(path);
    const fail = (why: string): never => {
      throw new ConstraintError(`The provided JSON schema contains features not supported by xgrammar: ${why} at ${where}.`, 'structured_outputs');
    };
    if (node.type !== 'integer' && node.type !== 'number') fail(`${present[0]} without "type": "integer" or "number"`);
    if ('enum' in node || 'const' in node) fail(`${present[0]} together with enum or const`);
    const b: NumericBounds = {};
    for (const key of BOUNDS) {
      const value = node[key];
      if (value === undefined) continue;
      // Draft 4 wrote exclusive bounds as booleans beside minimum / maximum.
      if (typeof value === 'boolean') continue;
      if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${key} that is not a number`);
      b[key] = value as number;
    }
    if (node.exclusiveMinimum === true && b.minimum !== undefined) b.exclusiveMinimum = b.minimum;
    if (node.exclusiveMaximum === true && b.maximum !== undefined) b.exclusiveMaximum = b.maximum;
    const ebnf = node.type === 'integer' ? integerRangeEbnf(b) : numberRangeEbnf(b);
    if (ebnf === null) {
      throw new ConstraintError(
        node.type === 'integer'
          ? `The provided JSON schema allows no integer at ${where}: its bounds exclude every value.`
          : `The provided JSON schema's bounds at ${where} leave no number Hearth can generate (it needs an integer, or a fraction of at most 15 significant digits, inside them).`,
        'structured_outputs',
      );
    }
    const index = ranges.length;
    const placeholder = `__hearth_range_${nonce}_${index}__`;
    ranges.push({ placeholder, rule: `hearth_range_${index}`, ebnf });
    return { const: placeholder };
  });
  return { schema: rewritten, ranges };
}
