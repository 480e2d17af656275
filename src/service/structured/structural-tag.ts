/**
 * Structural tags (xgrammar's format for "free text, with tagged parts that follow a grammar",
 * e.g. tool calls inside <tool_call>...</tool_call>), read from a request:
 * - accepted as xgrammar's current form `{"type": "structural_tag", "format": {...}}` (or a bare
 *   format) and as vLLM's legacy form `{"structures": [{begin, schema, end}], "triggers": [...]}`,
 *   which means a triggered_tags format of json_schema tags;
 * - checked here, format by format, so that a malformed tag is a 400 that says what is wrong
 *   (xgrammar throws an anonymous C++ exception for it);
 * - its json_schema parts are compiled the way a top-level schema is (grammar-compiler.ts turns
 *   them into grammar formats, so Hearth's schema checks and numeric ranges apply inside too).
 *
 * Not here: compiling (grammar-compiler.ts).
 * Reference: xgrammar web/src/structural_tag.ts (the format types).
 */
import { ConstraintError } from './errors';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads a request's structural tag (JSON text or object) as `{"type": "structural_tag", "format": ...}`. */
export function structuralTagOf(value: unknown, field: string): Json {
  const fail = (why: string): never => {
    throw new ConstraintError(`Invalid structural tag specification: ${why}`, field);
  };
  let tag = value;
  if (typeof tag === 'string') {
    try {
      tag = JSON.parse(tag);
    } catch (e) {
      fail((e as Error).message);
    }
  }
  if (!isObject(tag)) return fail('expected a JSON object.');
  let format: unknown;
  if ('structures' in tag) {
    const { structures, triggers } = tag;
    if (!Array.isArray(structures) || !Array.isArray(triggers) || !triggers.every((t) => typeof t === 'string')) {
      fail('"structures" must be a list of {begin, schema, end} and "triggers" a list of strings.');
    }
    const tags = (structures as unknown[]).map((s, i) => {
      if (!isObject(s) || typeof s.begin !== 'string' || typeof s.end !== 'string' || !('schema' in s))
        fail(`structures[${i}] needs "begin", "schema" and "end".`);
      const item = s as Json;
      return { type: 'tag', begin: item.begin, content: { type: 'json_schema', json_schema: item.schema }, end: item.end };
    });
    format = { type: 'triggered_tags', triggers, tags };
  } else if ('format' in tag) {
    if (tag.type !== undefined && tag.type !== 'structural_tag') fail('"type" must be "structural_tag" when "format" is given.');
    format = tag.format;
  } else {
    format = tag;
  }
  checkFormat(format, 'format', fail);
  return { type: 'structural_tag', format };
}

const isString = (v: unknown) => typeof v === 'string';
const isOptionalBool = (v: unknown) => v === undefined || typeof v === 'boolean';

/** Throws (through `fail`) at the first malformed format, naming its path. */
function checkFormat(f: unknown, path: string, fail: (why: string) => never): void {
  if (!isObject(f) || typeof f.type !== 'string') return fail(`${path} must be an object with a "type".`);
  const need = (ok: boolean, what: string) => {
    if (!ok) fail(`${path} (${f.type}) needs ${what}.`);
  };
  switch (f.type) {
    case 'any_text':
      return;
    case 'const_string':
      return need(isString(f.value), 'a string "value"');
    case 'json_schema':
    case 'qwen_xml_parameter':
      return need(typeof f.json_schema === 'boolean' || isObject(f.json_schema), 'a "json_schema" object');
    case 'grammar':
      return need(isString(f.grammar) && f.grammar.trim() !== '', 'a non-empty "grammar"');
    case 'regex':
      return need(isString(f.pattern) && f.pattern !== '', 'a non-empty "pattern"');
    case 'sequence':
    case 'or': {
      need(Array.isArray(f.elements) && f.elements.length > 0, 'a non-empty "elements" list');
      (f.elements as unknown[]).forEach((e, i) => checkFormat(e, `${path}.elements[${i}]`, fail));
      return;
    }
    case 'tag': {
      need(isString(f.begin) && isString(f.end), 'string "begin" and "end"');
      return checkFormat(f.content, `${path}.content`, fail);
    }
    case 'triggered_tags':
    case 'tags_with_separator': {
      if (f.type === 'triggered_tags')
        need(Array.isArray(f.triggers) && f.triggers.length > 0 && f.triggers.every(isString), 'a non-empty "triggers" list of strings');
      else need(isString(f.separator), 'a string "separator"');
      need(Array.isArray(f.tags) && f.tags.length > 0, 'a non-empty "tags" list');
      need(isOptionalBool(f.at_least_one) && isOptionalBool(f.stop_after_first), 'booleans for "at_least_one" and "stop_after_first"');
      (f.tags as unknown[]).forEach((t, i) => {
        if (!isObject(t) || t.type !== 'tag') fail(`${path}.tags[${i}] must be a format of type "tag".`);
        checkFormat(t, `${path}.tags[${i}]`, fail);
      });
      if (f.type === 'triggered_tags') {
        for (const [i, t] of (f.tags as Json[]).entries()) {
          if (!(f.triggers as string[]).some((trigger) => (t.begin as string).startsWith(trigger)))
            fail(`${path}.tags[${i}].begin starts with none of the triggers.`);
        }
      }
      return;
    }
    default:
      return fail(`${path} has the unknown type "${f.type}".`);
  }
}

/** Copies the tag with every json_schema format replaced by `rewrite(schema)` (a format). */
export async function mapJsonSchemas(tag: Json, rewrite: (schema: unknown) => Promise<Json>): Promise<Json> {
  const walk = async (f: Json): Promise<Json> => {
    switch (f.type) {
      case 'json_schema':
        return rewrite(f.json_schema);
      case 'sequence':
      case 'or':
        return { ...f, elements: await Promise.all((f.elements as Json[]).map(walk)) };
      case 'tag':
        return { ...f, content: await walk(f.content as Json) };
      case 'triggered_tags':
      case 'tags_with_separator':
        return { ...f, tags: await Promise.all((f.tags as Json[]).map(walk)) };
      default:
        return f;
    }
  };
  return { ...tag, format: await walk(tag.format as Json) };
}
