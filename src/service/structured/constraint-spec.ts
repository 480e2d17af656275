/**
 * From a chat request's structured-output fields to the one constraint its output must follow
 * (or none), with vLLM's rules and messages (docs/reference/vllm-chat.md §2 rows response_format,
 * structured_outputs, tools / tool_choice; §6):
 * - `structured_outputs`: json (a schema, as an object or JSON text), regex, choice, grammar
 *   (EBNF), json_object, structural_tag, and the options disable_any_whitespace,
 *   disable_additional_properties, whitespace_pattern; `_backend` may only name "xgrammar";
 *   disable_fallback is accepted (xgrammar never falls back).
 * - JSON whitespace (issue 13): unlike vLLM, whose default lets JSON hold any amount of it (a
 *   small model then writes spaces and newlines until its length limit), every JSON grammar is
 *   compact by default: the layout vLLM's disable_any_whitespace gives (", " and ": ", nothing
 *   else). An explicit `disable_any_whitespace: false` allows any whitespace again, at most
 *   JSON_WHITESPACE_LIMIT characters per run; whitespace_pattern is the client's own rule.
 * - `response_format`: json_object -> a JSON object; json_schema -> its schema (`strict` maps to
 *   disable_additional_properties, OpenAI's meaning of strict); structural_tag -> the tag.
 * - `tool_choice`: a named function or "required" -> the schemas of tool-choice-schemas.ts.
 * Exactly one constraint per request; contradictions are ConstraintErrors (400) naming the field.
 *
 * The result is plain data: its `key` is the canonical text the compiler caches grammars by.
 * Not here: compiling (grammar-compiler.ts), the JSON-schema keywords xgrammar cannot honour
 * (json-schema-support.ts), parsing the tool calls out of the output (chat/tool-calls-forced.ts).
 */
import type { ChatRequest, ChatTool } from '../chat/request';
import { ConstraintError, ensureConstraint } from './errors';
import { structuralTagOf } from './structural-tag';
import { namedToolSchema, requiredToolsSchema } from './tool-choice-schemas';

/**
 * Most whitespace characters between two JSON tokens when a request allows any whitespace
 * (`disable_any_whitespace: false`): a newline and the indentation of 9 levels of 2 spaces, so
 * pretty-printed JSON fits and a run of whitespace still cannot fill the length limit.
 */
export const JSON_WHITESPACE_LIMIT = 20;

/** How JSON whitespace between tokens is constrained. */
export type JsonWhitespace =
  /** Spaces, newlines and tabs, at most JSON_WHITESPACE_LIMIT per run (`disable_any_whitespace: false`). */
  | { type: 'any' }
  /** Python json.dumps layout: ", " and ": ", no newlines (disable_any_whitespace; the default). */
  | { type: 'none' }
  /** Every whitespace run matches this regex (whitespace_pattern). */
  | { type: 'pattern'; pattern: string };

export type Constraint =
  | { kind: 'json'; schema: unknown; whitespace: JsonWhitespace; disableAdditionalProperties: boolean }
  | { kind: 'regex'; pattern: string }
  | { kind: 'choice'; choices: string[] }
  | { kind: 'grammar'; ebnf: string }
  /** xgrammar's structural tag: `{"type": "structural_tag", "format": {...}}`. */
  | { kind: 'structural_tag'; tag: Record<string, unknown> };

/** What the constrained output becomes in the response. */
export type ConstrainedOutput = { type: 'content' } | { type: 'named_tool'; name: string } | { type: 'required_tools'; parallel: boolean };

export interface StructuredOutputSpec {
  constraint: Constraint;
  output: ConstrainedOutput;
  /** The request field the constraint came from (the `param` of its errors). */
  param: string;
  /** Canonical text of the constraint: equal keys compile to the same grammar. */
  key: string;
}

export type StructuredRequestFields = Pick<
  ChatRequest,
  'structured_outputs' | 'response_format' | 'tools' | 'tool_choice' | 'parallel_tool_calls'
>;

/** The only structured-output backend Hearth has; `_backend` may name it and nothing else. */
export const STRUCTURED_OUTPUT_BACKEND = 'xgrammar';

const CONSTRAINT_FIELDS = ['json', 'regex', 'choice', 'grammar', 'json_object', 'structural_tag'] as const;

interface Options {
  /** null: not sent. */
  disableAnyWhitespace: boolean | null;
  disableAdditionalProperties: boolean;
  whitespacePattern: string | null;
}

/** One constraint candidate: the field it came from and how to build it once it is the only one. */
interface Candidate {
  param: string;
  build(options: Options): Omit<StructuredOutputSpec, 'key' | 'param'>;
}

/** The request's constraint, or null when its output is free. Throws ConstraintError. */
export function structuredOutputSpec(req: StructuredRequestFields): StructuredOutputSpec | null {
  const so = req.structured_outputs ?? {};
  const options = readOptions(so);
  const candidates: Candidate[] = [...structuredOutputsCandidates(so), ...responseFormatCandidates(req)];
  const tool = toolChoiceCandidate(req);
  if (tool && candidates.length > 0) {
    throw new ConstraintError('You can only either use constraints for structured outputs or tools, not both.', 'tool_choice');
  }
  if (tool) candidates.push(tool);
  if (candidates.length === 0) return null;
  if (candidates.length > 1) {
    throw new ConstraintError(
      `You can only use one kind of structured outputs constraint but multiple are specified: ${candidates.map((c) => c.param).join(', ')}.`,
      candidates[1].param.split(/[ .]/)[0],
    );
  }
  const [only] = candidates;
  const built = only.build(options);
  checkOptionsApply(built.constraint, options);
  return { ...built, param: only.param, key: constraintKey(built.constraint) };
}

/** The canonical text of a constraint (key order of schemas is kept: it orders the output). */
export function constraintKey(c: Constraint): string {
  switch (c.kind) {
    case 'json':
      return `json:${JSON.stringify(c.whitespace)}:${c.disableAdditionalProperties}:${JSON.stringify(c.schema)}`;
    case 'regex':
      return `regex:${c.pattern}`;
    case 'choice':
      return `choice:${JSON.stringify(c.choices)}`;
    case 'grammar':
      return `grammar:${c.ebnf}`;
    case 'structural_tag':
      return `structural_tag:${JSON.stringify(c.tag)}`;
  }
}

// pydantic's lax booleans, as the rest of the chat request reads them.
const TRUE = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

function laxBool(value: unknown, field: string): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  if (typeof value === 'string') {
    const s = value.trim().toLowerCase();
    if (TRUE.has(s)) return true;
    if (FALSE.has(s)) return false;
  }
  throw new ConstraintError(`structured_outputs.${field}: Input should be a valid boolean`, 'structured_outputs');
}

function optionalString(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  ensureConstraint(typeof value === 'string', `${field}: Input should be a valid string`, field.split('.')[0]);
  return value;
}

function readOptions(so: Record<string, unknown>): Options {
  const backend = optionalString(so._backend, 'structured_outputs._backend');
  ensureConstraint(
    backend === null || backend === STRUCTURED_OUTPUT_BACKEND,
    `Request-level structured output backend selection is not supported. The request specified '${backend}', but Hearth was initialised with '${STRUCTURED_OUTPUT_BACKEND}'. This error can be resolved by removing '_backend' from the request.`,
    'structured_outputs',
  );
  laxBool(so._backend_was_auto, '_backend_was_auto');
  // xgrammar never falls back to another backend, so there is nothing to disable.
  laxBool(so.disable_fallback, 'disable_fallback');
  const whitespacePattern = optionalString(so.whitespace_pattern, 'structured_outputs.whitespace_pattern');
  const options = {
    disableAnyWhitespace: laxBool(so.disable_any_whitespace, 'disable_any_whitespace'),
    disableAdditionalProperties: laxBool(so.disable_additional_properties, 'disable_additional_properties') ?? false,
    whitespacePattern,
  };
  ensureConstraint(
    !(options.disableAnyWhitespace === true && whitespacePattern !== null),
    'structured_outputs: whitespace_pattern and disable_any_whitespace contradict each other; send one of them.',
    'structured_outputs',
  );
  return options;
}

function jsonWhitespace(options: Options): JsonWhitespace {
  if (options.whitespacePattern !== null) return { type: 'pattern', pattern: options.whitespacePattern };
  // Compact unless the request asks for whitespace by name (see the header).
  return options.disableAnyWhitespace === false ? { type: 'any' } : { type: 'none' };
}

function jsonConstraint(schema: unknown, options: Options, strict = false): Constraint {
  return {
    kind: 'json',
    schema,
    whitespace: jsonWhitespace(options),
    disableAdditionalProperties: options.disableAdditionalProperties || strict,
  };
}

const content: ConstrainedOutput = { type: 'content' };

function structuredOutputsCandidates(so: Record<string, unknown>): Candidate[] {
  const out: Candidate[] = [];
  for (const field of CONSTRAINT_FIELDS) {
    const value = so[field];
    if (value === undefined || value === null) continue;
    const param = `structured_outputs.${field}`;
    switch (field) {
      case 'json': {
        const schema = parseJsonSchemaField(value);
        out.push({ param, build: (o) => ({ constraint: jsonConstraint(schema, o), output: content }) });
        break;
      }
      case 'regex': {
        const pattern = optionalString(value, param)!;
        out.push({ param, build: () => ({ constraint: { kind: 'regex', pattern }, output: content }) });
        break;
      }
      case 'choice': {
        ensureConstraint(
          Array.isArray(value) && value.every((c) => typeof c === 'string'),
          `${param}: Input should be a valid list of strings`,
          'structured_outputs',
        );
        const choices = value;
        ensureConstraint(choices.length > 0, "Choice '[]' cannot be an empty list", 'structured_outputs');
        out.push({ param, build: () => ({ constraint: { kind: 'choice', choices: [...choices] }, output: content }) });
        break;
      }
      case 'grammar': {
        const ebnf = optionalString(value, param)!;
        ensureConstraint(ebnf.trim().length > 0, 'structured_outputs.grammar cannot be an empty string', 'structured_outputs');
        out.push({ param, build: () => ({ constraint: { kind: 'grammar', ebnf }, output: content }) });
        break;
      }
      case 'json_object': {
        // `json_object: false` asks for nothing.
        if (laxBool(value, 'json_object') !== true) break;
        out.push({ param, build: (o) => ({ constraint: jsonConstraint({ type: 'object' }, o), output: content }) });
        break;
      }
      case 'structural_tag': {
        const tag = structuralTagOf(value, 'structured_outputs');
        out.push({ param, build: () => ({ constraint: { kind: 'structural_tag', tag }, output: content }) });
        break;
      }
    }
  }
  return out;
}

function responseFormatCandidates(req: StructuredRequestFields): Candidate[] {
  const rf = req.response_format;
  if (!rf || rf.type === 'text') return [];
  const param = `response_format ${rf.type}`;
  if (rf.type === 'json_object') return [{ param, build: (o) => ({ constraint: jsonConstraint({ type: 'object' }, o), output: content }) }];
  if (rf.type === 'json_schema') {
    const js = rf.json_schema;
    ensureConstraint(
      typeof js === 'object' && js !== null && !Array.isArray(js),
      'response_format: "json_schema" must be an object with the schema when type is "json_schema".',
      'response_format',
    );
    // OpenAI's field is `schema`; vLLM's pydantic model also takes it by its attribute name.
    const raw = 'schema' in js ? js.schema : js.json_schema;
    // No schema: any JSON value (the empty schema) is what the request allows.
    const schema = raw === undefined || raw === null ? {} : raw;
    ensureConstraint(
      typeof schema === 'boolean' || (typeof schema === 'object' && !Array.isArray(schema)),
      'response_format.json_schema.schema: Input should be a valid dictionary',
      'response_format',
    );
    const strict = js.strict === true;
    return [{ param, build: (o) => ({ constraint: jsonConstraint(schema, o, strict), output: content }) }];
  }
  if (rf.type === 'structural_tag') {
    const { type: _type, ...rest } = rf;
    const tag = structuralTagOf({ type: 'structural_tag', ...rest }, 'response_format');
    return [{ param, build: () => ({ constraint: { kind: 'structural_tag', tag }, output: content }) }];
  }
  throw new ConstraintError(
    `response_format: unknown type "${rf.type}"; use text, json_object, json_schema or structural_tag.`,
    'response_format',
  );
}

function toolChoiceCandidate(req: StructuredRequestFields): Candidate | null {
  const tc = req.tool_choice;
  const tools: readonly ChatTool[] = req.tools ?? [];
  const parallel = req.parallel_tool_calls !== false;
  const param = 'tool_choice';
  // vLLM v0.11: "required" with no tools behaves as "none" (check.ts lets it through).
  if (tc === 'required') {
    if (tools.length === 0) return null;
    const schema = requiredToolsSchema(tools, parallel);
    return { param, build: (o) => ({ constraint: jsonConstraint(schema, o), output: { type: 'required_tools', parallel } }) };
  }
  if (typeof tc === 'object' && tc !== null && !Array.isArray(tc)) {
    const fn = (tc as Record<string, unknown>).function as Record<string, unknown> | undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const schema = namedToolSchema(tools, name);
    return { param, build: (o) => ({ constraint: jsonConstraint(schema, o), output: { type: 'named_tool', name } }) };
  }
  return null;
}

/** `json` is a schema object (or boolean schema) or its JSON text. */
function parseJsonSchemaField(value: unknown): unknown {
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch (e) {
      throw new ConstraintError(`Invalid JSON grammar specification: ${(e as Error).message}`, 'structured_outputs');
    }
  }
  ensureConstraint(
    typeof value === 'boolean' || (typeof value === 'object' && value !== null && !Array.isArray(value)),
    'Invalid JSON grammar specification: a JSON schema is an object (or true / false).',
    'structured_outputs',
  );
  return value;
}

/** A structural tag's JSON parts are always compact: the JSON layout options would not be honoured, so refuse them. */
function checkOptionsApply(c: Constraint, o: Options): void {
  if (c.kind !== 'structural_tag') return;
  const set = [
    o.disableAnyWhitespace !== null && 'disable_any_whitespace',
    o.whitespacePattern !== null && 'whitespace_pattern',
    o.disableAdditionalProperties && 'disable_additional_properties',
  ].filter(Boolean);
  ensureConstraint(
    set.length === 0,
    `structured_outputs.${set[0]} cannot be applied to a structural_tag; send it without.`,
    'structured_outputs',
  );
}
