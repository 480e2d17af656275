// Reading a request's constraint as a pure function: which field asks for what, vLLM's messages
// for contradictions and malformed fields, the tool-choice schemas, and the cache key.
import { describe, expect, it } from 'vitest';
import type { ChatTool } from '../../../src/service/chat/request';
import { constraintKey, structuredOutputSpec, type StructuredRequestFields } from '../../../src/service/structured/constraint-spec';
import { ConstraintError } from '../../../src/service/structured/errors';

function refusal(fields: StructuredRequestFields): ConstraintError {
  try {
    structuredOutputSpec(fields);
  } catch (e) {
    if (e instanceof ConstraintError) return e;
    throw e;
  }
  throw new Error('accepted');
}

const weather: ChatTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { $ref: '#/$defs/city' } }, required: ['city'], $defs: { city: { type: 'string' } } },
  },
};
const clock: ChatTool = { type: 'function', function: { name: 'now', parameters: null } };
const book: ChatTool = {
  type: 'function',
  function: {
    name: 'book',
    parameters: { type: 'object', properties: { at: { $ref: '#/$defs/city' } }, $defs: { city: { type: 'string' } } },
  },
};

describe('which field asks for a constraint', () => {
  it('none: no fields, response_format text, json_object false, tool_choice none or auto', () => {
    expect(structuredOutputSpec({})).toBeNull();
    expect(structuredOutputSpec({ response_format: { type: 'text' } })).toBeNull();
    expect(structuredOutputSpec({ structured_outputs: { json_object: false, disable_any_whitespace: true } })).toBeNull();
    expect(structuredOutputSpec({ tools: [weather], tool_choice: 'auto' })).toBeNull();
    expect(structuredOutputSpec({ tools: [weather], tool_choice: 'none' })).toBeNull();
    expect(structuredOutputSpec({ tools: [weather] })).toBeNull();
    // vLLM v0.11: "required" with no tools behaves as "none".
    expect(structuredOutputSpec({ tools: [], tool_choice: 'required' })).toBeNull();
  });

  it('structured_outputs fields', () => {
    const schema = { type: 'object', properties: { b: { type: 'integer' }, a: { type: 'string' } } };
    expect(structuredOutputSpec({ structured_outputs: { json: schema } })).toMatchObject({
      constraint: { kind: 'json', schema, whitespace: { type: 'none' }, disableAdditionalProperties: false },
      output: { type: 'content' },
      param: 'structured_outputs.json',
    });
    expect(structuredOutputSpec({ structured_outputs: { json: JSON.stringify(schema) } })!.constraint).toMatchObject({
      kind: 'json',
      schema,
    });
    expect(structuredOutputSpec({ structured_outputs: { regex: '\\d+' } })!.constraint).toEqual({ kind: 'regex', pattern: '\\d+' });
    expect(structuredOutputSpec({ structured_outputs: { choice: ['a', 'b'] } })!.constraint).toEqual({
      kind: 'choice',
      choices: ['a', 'b'],
    });
    expect(structuredOutputSpec({ structured_outputs: { grammar: 'root ::= "x"' } })!.constraint).toEqual({
      kind: 'grammar',
      ebnf: 'root ::= "x"',
    });
    expect(structuredOutputSpec({ structured_outputs: { json_object: 'true' } })!.constraint).toMatchObject({
      kind: 'json',
      schema: { type: 'object' },
    });
    expect(
      structuredOutputSpec({
        structured_outputs: { structural_tag: '{"structures": [{"begin": "<a>", "schema": {}, "end": "</a>"}], "triggers": ["<a"]}' },
      })!.constraint,
    ).toEqual({
      kind: 'structural_tag',
      tag: {
        type: 'structural_tag',
        format: {
          type: 'triggered_tags',
          triggers: ['<a'],
          tags: [{ type: 'tag', begin: '<a>', content: { type: 'json_schema', json_schema: {} }, end: '</a>' }],
        },
      },
    });
  });

  it('the JSON options', () => {
    const json = (so: Record<string, unknown>) => structuredOutputSpec({ structured_outputs: { json: {}, ...so } })!.constraint;
    expect(json({ disable_any_whitespace: true })).toMatchObject({ whitespace: { type: 'none' } });
    // Compact unless whitespace is asked for by name (issue 13).
    expect(json({})).toMatchObject({ whitespace: { type: 'none' } });
    expect(json({ disable_any_whitespace: 'false' })).toMatchObject({ whitespace: { type: 'any' } });
    expect(json({ disable_any_whitespace: false, whitespace_pattern: ' ?' })).toMatchObject({
      whitespace: { type: 'pattern', pattern: ' ?' },
    });
    expect(json({ whitespace_pattern: '[ ]?' })).toMatchObject({ whitespace: { type: 'pattern', pattern: '[ ]?' } });
    expect(json({ disable_additional_properties: 'yes' })).toMatchObject({ disableAdditionalProperties: true });
    // Options meaningless for a regex are accepted (nothing to loosen).
    expect(structuredOutputSpec({ structured_outputs: { regex: 'a', disable_any_whitespace: true } })!.constraint).toEqual({
      kind: 'regex',
      pattern: 'a',
    });
    expect(
      structuredOutputSpec({ structured_outputs: { regex: 'a', disable_fallback: true, _backend: 'xgrammar', _backend_was_auto: false } }),
    ).not.toBeNull();
  });

  it('response_format maps onto the same constraints', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(structuredOutputSpec({ response_format: { type: 'json_object' } })).toMatchObject({
      constraint: { kind: 'json', schema: { type: 'object' } },
      param: 'response_format json_object',
    });
    expect(
      structuredOutputSpec({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } })!.constraint,
    ).toMatchObject({ kind: 'json', schema, disableAdditionalProperties: false });
    // strict (OpenAI): no property beyond those declared.
    expect(
      structuredOutputSpec({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } })!.constraint,
    ).toMatchObject({ disableAdditionalProperties: true });
    // No schema: any JSON value.
    expect(structuredOutputSpec({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } })!.constraint).toMatchObject({
      kind: 'json',
      schema: {},
    });
    // The structured_outputs options still apply.
    expect(
      structuredOutputSpec({ response_format: { type: 'json_object' }, structured_outputs: { disable_any_whitespace: true } })!.constraint,
    ).toMatchObject({ whitespace: { type: 'none' } });
    expect(structuredOutputSpec({ response_format: { type: 'structural_tag', format: { type: 'any_text' } } })!.constraint).toEqual({
      kind: 'structural_tag',
      tag: { type: 'structural_tag', format: { type: 'any_text' } },
    });
  });
});

describe('tool choices that need a constraint', () => {
  it('a named function: its parameters, and the output becomes that call', () => {
    const spec = structuredOutputSpec({ tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'get_weather' } } })!;
    expect(spec.constraint).toMatchObject({ kind: 'json', schema: weather.function.parameters });
    expect(spec.output).toEqual({ type: 'named_tool', name: 'get_weather' });
    expect(spec.param).toBe('tool_choice');
    // A tool without parameters still gets a JSON object.
    expect(
      structuredOutputSpec({ tools: [clock], tool_choice: { type: 'function', function: { name: 'now' } } })!.constraint,
    ).toMatchObject({ schema: { type: 'object', properties: {} } });
  });

  it('"required": an array of {name, parameters} per tool with $defs hoisted; one call without parallel_tool_calls', () => {
    const spec = structuredOutputSpec({ tools: [weather, clock, book], tool_choice: 'required' })!;
    expect(spec.output).toEqual({ type: 'required_tools', parallel: true });
    expect(spec.constraint).toMatchObject({
      kind: 'json',
      schema: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          anyOf: [
            {
              properties: {
                name: { type: 'string', enum: ['get_weather'] },
                parameters: { type: 'object', properties: { city: { $ref: '#/$defs/city' } }, required: ['city'] },
              },
              required: ['name', 'parameters'],
            },
            {
              properties: { name: { type: 'string', enum: ['now'] }, parameters: { type: 'object', properties: {} } },
              required: ['name', 'parameters'],
            },
            { properties: { name: { enum: ['book'] }, parameters: { type: 'object', properties: { at: { $ref: '#/$defs/city' } } } } },
          ],
        },
        $defs: { city: { type: 'string' } },
      },
    });
    const schema = (spec.constraint as { schema: Record<string, unknown> }).schema;
    expect('maxItems' in schema).toBe(false);
    expect(JSON.stringify((schema.items as { anyOf: unknown[] }).anyOf)).not.toContain('"$defs":');
    const single = structuredOutputSpec({ tools: [weather], tool_choice: 'required', parallel_tool_calls: false })!;
    expect(single.constraint).toMatchObject({ schema: { maxItems: 1 } });
    expect(single.output).toEqual({ type: 'required_tools', parallel: false });
  });

  it('two tools defining one $defs name differently are refused', () => {
    const other: ChatTool = {
      type: 'function',
      function: { name: 'x', parameters: { type: 'object', $defs: { city: { type: 'integer' } } } },
    };
    expect(refusal({ tools: [weather, other], tool_choice: 'required' }).message).toBe(
      "Tool definition 'city' has multiple schemas, which is not supported.",
    );
  });
});

describe("vLLM's refusals", () => {
  it.each([
    [
      { structured_outputs: { json: {}, grammar: 'root ::= "a"' } },
      'You can only use one kind of structured outputs constraint but multiple are specified: structured_outputs.json, structured_outputs.grammar.',
    ],
    [
      { structured_outputs: { regex: 'a' }, response_format: { type: 'json_object' } },
      'You can only use one kind of structured outputs constraint but multiple are specified: structured_outputs.regex, response_format json_object.',
    ],
    [
      { structured_outputs: { json: {} }, tools: [weather], tool_choice: 'required' },
      'You can only either use constraints for structured outputs or tools, not both.',
    ],
    [
      { response_format: { type: 'json_object' }, tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } },
      'You can only either use constraints for structured outputs or tools, not both.',
    ],
    [{ structured_outputs: { choice: [] } }, "Choice '[]' cannot be an empty list"],
    [{ structured_outputs: { choice: ['a', 1] } }, 'structured_outputs.choice: Input should be a valid list of strings'],
    [{ structured_outputs: { grammar: '  ' } }, 'structured_outputs.grammar cannot be an empty string'],
    [{ structured_outputs: { regex: 5 } }, 'structured_outputs.regex: Input should be a valid string'],
    [{ structured_outputs: { json: '{"type": ' } }, 'Invalid JSON grammar specification: '],
    [{ structured_outputs: { json: [1] } }, 'Invalid JSON grammar specification: a JSON schema is an object (or true / false).'],
    [{ structured_outputs: { json_object: 'maybe' } }, 'structured_outputs.json_object: Input should be a valid boolean'],
    [
      { structured_outputs: { regex: 'a', _backend: 'guidance' } },
      "Request-level structured output backend selection is not supported. The request specified 'guidance', but Hearth was initialised with 'xgrammar'. This error can be resolved by removing '_backend' from the request.",
    ],
    [
      { structured_outputs: { json: {}, whitespace_pattern: ' ', disable_any_whitespace: true } },
      'structured_outputs: whitespace_pattern and disable_any_whitespace contradict each other; send one of them.',
    ],
    [
      { structured_outputs: { structural_tag: { format: { type: 'any_text' } }, disable_any_whitespace: true } },
      'structured_outputs.disable_any_whitespace cannot be applied to a structural_tag; send it without.',
    ],
    [
      { response_format: { type: 'json_schema' } },
      'response_format: "json_schema" must be an object with the schema when type is "json_schema".',
    ],
    [
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [] } } },
      'response_format.json_schema.schema: Input should be a valid dictionary',
    ],
    [{ structured_outputs: { structural_tag: 'not json' } }, 'Invalid structural tag specification: '],
    [
      { tools: [weather], tool_choice: { type: 'function', function: { name: 'missing' } } },
      "Tool 'missing' has not been passed in `tools`.",
    ],
  ] as [StructuredRequestFields, string][])('%j', (fields, message) => {
    const e = refusal(fields);
    expect(e.message.startsWith(message), e.message).toBe(true);
    expect(e.status).toBe(400);
    expect(e.param).toMatch(/^(structured_outputs|response_format|tool_choice|tools)$/);
  });
});

describe('the cache key', () => {
  it('equal constraints share a key; any difference that changes the grammar changes it', () => {
    const key = (fields: StructuredRequestFields) => structuredOutputSpec(fields)!.key;
    const schema = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } } };
    expect(key({ structured_outputs: { json: schema } })).toBe(key({ structured_outputs: { json: JSON.stringify(schema) } }));
    expect(key({ structured_outputs: { json: schema } })).toBe(
      key({ response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } }),
    );
    expect(key({ structured_outputs: { json: schema } })).not.toBe(
      key({ structured_outputs: { json: schema, disable_any_whitespace: false } }),
    );
    expect(key({ structured_outputs: { json: schema } })).not.toBe(
      key({ response_format: { type: 'json_schema', json_schema: { name: 'n', schema, strict: true } } }),
    );
    // Property order orders the output, so it is part of the key.
    expect(key({ structured_outputs: { json: schema } })).not.toBe(
      key({ structured_outputs: { json: { type: 'object', properties: { b: { type: 'integer' }, a: { type: 'string' } } } } }),
    );
    expect(constraintKey({ kind: 'choice', choices: ['a', 'b'] })).not.toBe(constraintKey({ kind: 'choice', choices: ['b', 'a'] }));
    expect(constraintKey({ kind: 'regex', pattern: 'a' })).not.toBe(constraintKey({ kind: 'grammar', ebnf: 'a' }));
  });
});
