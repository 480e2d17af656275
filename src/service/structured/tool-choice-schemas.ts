/**
 * The JSON schemas that enforce a tool choice, as vLLM builds them (docs/reference/vllm-chat.md §6,
 * ChatCompletionRequest._get_json_schema_from_tool):
 * - a named function: the output is that function's arguments, so the schema is its
 *   `parameters` (an object with no properties when the tool declares none: vLLM leaves such a
 *   call unconstrained, Hearth still guarantees a JSON object);
 * - "required": a non-empty array of `{name, parameters}` items, one `anyOf` branch per tool
 *   (name pinned by an enum, parameters by the tool's schema), with every tool's `$defs` hoisted
 *   to the root so `#/$defs/...` references still resolve; two tools defining one name
 *   differently is refused. With `parallel_tool_calls: false` the array holds one call
 *   (`maxItems: 1`, as newer vLLM does).
 *
 * Not here: turning the constrained output into tool_calls (chat/tool-calls-forced.ts).
 */
import type { ChatTool } from '../chat/request';
import { ConstraintError } from './errors';

type JsonObject = Record<string, unknown>;

const EMPTY_PARAMETERS: JsonObject = { type: 'object', properties: {} };

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Python's `==` on JSON values: dicts compare without regard to key order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

function parametersOf(tool: ChatTool): JsonObject | null {
  const p = tool.function.parameters;
  return isObject(p) && Object.keys(p).length > 0 ? p : null;
}

/** The schema of a named tool choice: the function's parameters. */
export function namedToolSchema(tools: readonly ChatTool[], name: string): JsonObject {
  const tool = tools.find((t) => t.function.name === name);
  if (!tool) throw new ConstraintError(`Tool '${name}' has not been passed in \`tools\`.`, 'tool_choice');
  return parametersOf(tool) ?? EMPTY_PARAMETERS;
}

/** The schema of tool_choice "required": an array of calls of the given tools. */
export function requiredToolsSchema(tools: readonly ChatTool[], parallelToolCalls: boolean): JsonObject {
  const defs: JsonObject = {};
  const branches = tools.map((tool) => {
    let parameters = parametersOf(tool);
    if (parameters && '$defs' in parameters) {
      const { $defs, ...rest } = parameters;
      for (const [defName, defSchema] of Object.entries(isObject($defs) ? $defs : {})) {
        if (defName in defs && !jsonEqual(defs[defName], defSchema)) {
          throw new ConstraintError(`Tool definition '${defName}' has multiple schemas, which is not supported.`, 'tools');
        }
        defs[defName] = defSchema;
      }
      parameters = rest;
    }
    return {
      properties: {
        name: { type: 'string', enum: [tool.function.name] },
        parameters: parameters ?? EMPTY_PARAMETERS,
      },
      required: ['name', 'parameters'],
    };
  });
  const schema: JsonObject = { type: 'array', minItems: 1, items: { type: 'object', anyOf: branches } };
  if (!parallelToolCalls) schema.maxItems = 1;
  if (Object.keys(defs).length > 0) schema.$defs = defs;
  return schema;
}
