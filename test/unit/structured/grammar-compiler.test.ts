// Compiling constraints with the real xgrammar WASM for the bundled models' real tokenizers, and
// walking the grammars with token sequences: valid documents are accepted, invalid ones refused,
// bitmasks hold exactly what the grammar allows, refused constraints say why.
import { beforeAll, describe, expect, it } from 'vitest';
import { JSON_WHITESPACE_LIMIT, structuredOutputSpec, type StructuredRequestFields } from '../../../src/service/structured/constraint-spec';
import { ConstraintError } from '../../../src/service/structured/errors';
import {
  compileStructuredOutput,
  grammarCacheStats,
  type CompiledConstraint,
  type StructuredModel,
} from '../../../src/service/structured/grammar-compiler';
import { acceptsDocument, feedText, nextAllowed, structuredModel } from './decode-helpers';

let model: StructuredModel;
beforeAll(async () => {
  model = await structuredModel('tiny-qwen3');
});

async function compiled(fields: StructuredRequestFields, m: StructuredModel = model): Promise<CompiledConstraint> {
  const spec = structuredOutputSpec(fields);
  if (!spec) throw new Error('no constraint');
  return compileStructuredOutput(spec, m);
}

async function refusal(fields: StructuredRequestFields): Promise<ConstraintError> {
  try {
    await compiled(fields);
  } catch (e) {
    if (e instanceof ConstraintError) return e;
    throw e;
  }
  throw new Error('the constraint compiled');
}

const accepts = (c: CompiledConstraint, text: string) => {
  const matcher = c.createConstraint();
  try {
    return acceptsDocument(matcher, model, text);
  } finally {
    matcher.dispose();
  }
};

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    role: { enum: ['admin', 'user', 'guest'] },
    address: {
      type: 'object',
      properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city'],
    },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
  },
  required: ['name', 'age', 'role'],
};

describe('JSON schemas: the grammar accepts documents of the schema and refuses the rest', () => {
  it('nested objects, enums, arrays, required fields', async () => {
    const c = await compiled({ structured_outputs: { json: person } });
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin"}')).toBe(true);
    expect(accepts(c, '{"name": "Bo", "age": 7, "role": "guest", "address": {"city": "Oslo", "zip": "01234"}, "tags": ["a", "b"]}')).toBe(
      true,
    );
    expect(accepts(c, '{"name": "x", "age": 150, "role": "user"}')).toBe(true);
    // a required field missing, an enum value outside the list, a bound broken, an extra field,
    // a pattern broken, too many items, the wrong type, a document cut short.
    expect(accepts(c, '{"name": "Ada", "role": "admin"}')).toBe(false);
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "root"}')).toBe(false);
    expect(accepts(c, '{"name": "Ada", "age": 151, "role": "admin"}')).toBe(false);
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin", "x": 1}')).toBe(false);
    expect(accepts(c, '{"name": "A", "age": 1, "role": "user", "address": {"city": "", "zip": "1234"}}')).toBe(false);
    expect(accepts(c, '{"name": "A", "age": 1, "role": "user", "tags": ["a", "b", "c", "d"]}')).toBe(false);
    expect(accepts(c, '{"name": "A", "age": "1", "role": "user"}')).toBe(false);
    expect(accepts(c, '{"name": "A", "age": 1, "role": "user"')).toBe(false);
  });

  it('arrays at the top, $ref recursion, anyOf and null', async () => {
    const c = await compiled({
      structured_outputs: {
        json: {
          type: 'array',
          minItems: 1,
          items: { $ref: '#/$defs/node' },
          $defs: {
            node: {
              type: 'object',
              properties: { v: { type: 'integer' }, next: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/node' }] } },
              required: ['v', 'next'],
            },
          },
        },
      },
    });
    expect(accepts(c, '[{"v": 1, "next": null}]')).toBe(true);
    expect(accepts(c, '[{"v": 1, "next": {"v": -2, "next": {"v": 3, "next": null}}}, {"v": 0, "next": null}]')).toBe(true);
    expect(accepts(c, '[]')).toBe(false);
    expect(accepts(c, '[{"v": 1, "next": {"v": 2}}]')).toBe(false);
    expect(accepts(c, '[{"v": 1.5, "next": null}]')).toBe(false);
  });

  it('the schema may be sent as JSON text, and response_format json_schema means the same', async () => {
    const asText = await compiled({ structured_outputs: { json: JSON.stringify(person) } });
    const viaFormat = await compiled({
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } },
    });
    for (const c of [asText, viaFormat]) {
      expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin"}')).toBe(true);
      expect(accepts(c, '{"name": "Ada", "age": 36}')).toBe(false);
    }
  });

  it('json_object (and response_format json_object) take any object and nothing else', async () => {
    for (const fields of [{ structured_outputs: { json_object: true } }, { response_format: { type: 'json_object' } }]) {
      const c = await compiled(fields);
      expect(accepts(c, '{"a": [1, {"b": null}], "c": "d"}')).toBe(true);
      expect(accepts(c, '{}')).toBe(true);
      expect(accepts(c, '[1, 2]')).toBe(false);
      expect(accepts(c, '"text"')).toBe(false);
    }
  });

  it('disable_any_whitespace allows only the compact layout of json.dumps', async () => {
    const c = await compiled({ structured_outputs: { json: person, disable_any_whitespace: true } });
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin"}')).toBe(true);
    expect(accepts(c, '{"name":"Ada","age":36,"role":"admin"}')).toBe(false);
    expect(accepts(c, '{\n  "name": "Ada", "age": 36, "role": "admin"}')).toBe(false);
  });

  it('by default the same compact layout, in every JSON grammar (issue 13)', async () => {
    const c = await compiled({ structured_outputs: { json: person } });
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin"}')).toBe(true);
    expect(accepts(c, '{"name": "Ada",  "age": 36, "role": "admin"}')).toBe(false);
    expect(accepts(c, '{ "name": "Ada", "age": 36, "role": "admin"}')).toBe(false);
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'add',
          parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] },
        },
      },
    ];
    const named = await compiled({ tools, tool_choice: { type: 'function', function: { name: 'add' } } });
    expect(accepts(named, '{"a": 1, "b": 2}')).toBe(true);
    expect(accepts(named, '{"a": 1,\n "b": 2}')).toBe(false);
    const required = await compiled({ tools, tool_choice: 'required' });
    expect(accepts(required, '[{"name": "add", "parameters": {"a": 1, "b": 2}}]')).toBe(true);
    expect(accepts(required, '[ {"name": "add", "parameters": {"a": 1, "b": 2}}]')).toBe(false);
    const object = await compiled({ response_format: { type: 'json_object' } });
    expect(accepts(object, '{"a": [1, {"b": null}]}')).toBe(true);
    expect(accepts(object, '{"a": [1,  {"b": null}]}')).toBe(false);
  });

  it('integers and numbers have at most 16 digits before the point, 16 after it and 3 in the exponent (issue 13)', async () => {
    const c = await compiled({
      structured_outputs: { json: { type: 'object', properties: { i: { type: 'integer' }, x: { type: 'number' } }, required: ['i', 'x'] } },
    });
    const sixteen = '9'.repeat(16);
    expect(accepts(c, `{"i": -${sixteen}, "x": ${sixteen}.${sixteen}e-308}`)).toBe(true);
    expect(accepts(c, `{"i": ${sixteen}9, "x": 1}`)).toBe(false);
    expect(accepts(c, `{"i": 1, "x": ${sixteen}9}`)).toBe(false);
    expect(accepts(c, `{"i": 1, "x": 0.${sixteen}1}`)).toBe(false);
    expect(accepts(c, `{"i": 1, "x": 1E+1000}`)).toBe(false);
    const any = await compiled({ structured_outputs: { json_object: true } });
    expect(accepts(any, `{"a": [${sixteen}, -0.5e10]}`)).toBe(true);
    expect(accepts(any, `{"a": [${sixteen}0]}`)).toBe(false);
  });

  it('disable_any_whitespace false allows any whitespace, at most JSON_WHITESPACE_LIMIT characters per run', async () => {
    const c = await compiled({ structured_outputs: { json: person, disable_any_whitespace: false } });
    expect(accepts(c, '{\n  "name":"Ada",\n\t"age" : 36,\n  "role": "admin"\n}')).toBe(true);
    expect(accepts(c, `{"name": "Ada",${' '.repeat(JSON_WHITESPACE_LIMIT)}"age": 36, "role": "admin"}`)).toBe(true);
    expect(accepts(c, `{"name": "Ada",${' '.repeat(JSON_WHITESPACE_LIMIT + 1)}"age": 36, "role": "admin"}`)).toBe(false);
    const object = await compiled({ structured_outputs: { json_object: true, disable_any_whitespace: false } });
    expect(accepts(object, `{"a": [1,${'\n'.repeat(JSON_WHITESPACE_LIMIT)}2]}`)).toBe(true);
    expect(accepts(object, `{"a": [1,${'\n'.repeat(JSON_WHITESPACE_LIMIT + 1)}2]}`)).toBe(false);
  });

  it('whitespace_pattern decides every whitespace run', async () => {
    const c = await compiled({ structured_outputs: { json: person, whitespace_pattern: '(\\n {0,2})?' } });
    expect(accepts(c, '{\n  "name":"Ada",\n  "age":36,\n  "role":"admin"\n}')).toBe(true);
    expect(accepts(c, '{"name":"Ada","age":36,"role":"admin"}')).toBe(true);
    expect(accepts(c, '{"name": "Ada", "age": 36, "role": "admin"}')).toBe(false);
    expect(accepts(c, '{\n\n"name":"Ada","age":36,"role":"admin"}')).toBe(false);
  });

  it('numeric bounds are exact, exclusive ones included (Hearth writes the range rules)', async () => {
    const c = await compiled({
      structured_outputs: {
        json: {
          type: 'object',
          properties: { i: { type: 'integer', minimum: -3 }, x: { type: 'number', exclusiveMinimum: 0, maximum: 2.5 } },
          required: ['i', 'x'],
        },
      },
    });
    expect(accepts(c, '{"i": -3, "x": 2}')).toBe(true);
    expect(accepts(c, '{"i": 12345, "x": 0.001}')).toBe(true);
    expect(accepts(c, '{"i": 0, "x": 1.75}')).toBe(true);
    expect(accepts(c, '{"i": -4, "x": 1}')).toBe(false);
    expect(accepts(c, '{"i": -, "x": 1}')).toBe(false);
    expect(accepts(c, '{"i": 1, "x": 0}')).toBe(false);
    expect(accepts(c, '{"i": 1, "x": 3}')).toBe(false);
    expect(accepts(c, '{"i": 1, "x": 2.75}')).toBe(false);
  });

  it('disable_additional_properties keeps objects to their declared properties', async () => {
    const open = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'], additionalProperties: true };
    const c = await compiled({ structured_outputs: { json: open } });
    expect(accepts(c, '{"a": 1, "extra": "x"}')).toBe(true);
    const closed = await compiled({
      structured_outputs: {
        json: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
        disable_additional_properties: true,
      },
    });
    expect(accepts(closed, '{"a": 1}')).toBe(true);
    expect(accepts(closed, '{"a": 1, "extra": "x"}')).toBe(false);
  });
});

const text = (id: number) => model.tokenizer.decode([id]);

describe('bitmasks against the tokenizer', () => {
  it('choice: exactly the tokens that start a choice, then exactly the stop tokens', async () => {
    const choices = ['yes', 'no', 'maybe not'];
    const c = await compiled({ structured_outputs: { choice: choices } });
    const matcher = c.createConstraint();
    const allowed = new Set(nextAllowed(matcher, model.vocabSize));
    for (let id = 0; id < model.vocabSize; id++) {
      const t = text(id);
      const isPrefix = t.length > 0 && !model.tokenizer.specialTokenIds.has(id) && choices.some((choice) => choice.startsWith(t));
      expect(allowed.has(id), `id ${id} ${JSON.stringify(t)}`).toBe(isPrefix);
    }
    expect(feedText(matcher, model, 'maybe not')).toBe(-1);
    expect(nextAllowed(matcher, model.vocabSize).sort((a, b) => a - b)).toEqual([...model.eosTokenIds].sort((a, b) => a - b));
    matcher.dispose();
  });

  it('choice strings with quotes, backslashes and newlines are taken literally', async () => {
    const c = await compiled({ structured_outputs: { choice: ['say "hi"', 'a\\b', 'two\nlines'] } });
    for (const ok of ['say "hi"', 'a\\b', 'two\nlines']) expect(accepts(c, ok)).toBe(true);
    for (const bad of ['say hi', 'a\\\\b', 'two lines']) expect(accepts(c, bad)).toBe(false);
  });

  it('regex: the first step allows exactly the tokens a match can start with', async () => {
    const c = await compiled({ structured_outputs: { regex: '[0-9]{3}-[a-z]+' } });
    const matcher = c.createConstraint();
    const allowed = new Set(nextAllowed(matcher, model.vocabSize));
    for (let id = 0; id < model.vocabSize; id++) {
      const t = text(id);
      const startsMatch = !model.tokenizer.specialTokenIds.has(id) && t.length > 0 && /^([0-9]{1,3}|[0-9]{3}-[a-z]*)$/.test(t);
      expect(allowed.has(id), `id ${id} ${JSON.stringify(t)}`).toBe(startsMatch);
    }
    matcher.dispose();
    expect(accepts(c, '123-abc')).toBe(true);
    expect(accepts(c, '12-abc')).toBe(false);
    expect(accepts(c, '123-')).toBe(false);
  });

  it('a padded vocabulary (config vocab_size above the tokenizer) never allows the padding ids', async () => {
    const padded = await structuredModel('tiny-qwen3', 4096 + 70);
    const c = await compiled({ structured_outputs: { json_object: true } }, padded);
    const matcher = c.createConstraint();
    const bitmask = new Int32Array(Math.ceil(padded.vocabSize / 32));
    expect(matcher.fillNextTokenBitmask(bitmask)).toBe(true);
    for (let id = 4096; id < padded.vocabSize; id++) expect((bitmask[id >>> 5] >>> (id & 31)) & 1).toBe(0);
    expect(matcher.acceptToken(4100)).toBe(false);
    matcher.dispose();
  });
});

describe('EBNF grammars', () => {
  it('a recursive grammar accepts its language only', async () => {
    const c = await compiled({
      structured_outputs: { grammar: 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"' },
    });
    for (const ok of ['1', '12+3', '(1-2)+(3+(4))', '((7))']) expect(accepts(c, ok), ok).toBe(true);
    for (const bad of ['', '+1', '(1', '1+', '1)', 'a']) expect(accepts(c, bad), bad).toBe(false);
  });
});

describe('structural tags', () => {
  it('free text, and inside a triggered tag the schema (xgrammar format and vLLM legacy format)', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const modern = await compiled({
      structured_outputs: {
        structural_tag: JSON.stringify({
          type: 'structural_tag',
          format: {
            type: 'triggered_tags',
            triggers: ['<tool_call>'],
            tags: [{ type: 'tag', begin: '<tool_call>', content: { type: 'json_schema', json_schema: schema }, end: '</tool_call>' }],
          },
        }),
      },
    });
    const legacy = await compiled({
      response_format: {
        type: 'structural_tag',
        structures: [{ begin: '<tool_call>', schema, end: '</tool_call>' }],
        triggers: ['<tool_call>'],
      },
    });
    for (const c of [modern, legacy]) {
      expect(accepts(c, 'Let me look. <tool_call>{"city": "Oslo"}</tool_call> Done.')).toBe(true);
      expect(accepts(c, 'No call at all.')).toBe(true);
      expect(accepts(c, 'Bad: <tool_call>{"town": "Oslo"}</tool_call>')).toBe(false);
    }
  });

  it('several schema tags (each compiled as a top-level schema, numeric ranges included)', async () => {
    const tag = (name: string, schema: object) => ({
      type: 'tag',
      begin: `<${name}>`,
      content: { type: 'json_schema', json_schema: schema },
      end: `</${name}>`,
    });
    const c = await compiled({
      structured_outputs: {
        structural_tag: {
          type: 'structural_tag',
          format: {
            type: 'triggered_tags',
            triggers: ['<get_'],
            tags: [
              tag('get_weather', { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
              tag('get_time', { type: 'object', properties: { tz: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['tz'] }),
            ],
          },
        },
      },
    });
    expect(accepts(c, 'a <get_weather>{"city": "Rome"}</get_weather> b <get_time>{"tz": -12}</get_time>')).toBe(true);
    expect(accepts(c, '<get_time>{"tz": 15}</get_time>')).toBe(false);
    expect(accepts(c, '<get_time>{"city": "Rome"}</get_time>')).toBe(false);
  });
});

describe('refused constraints name the problem (400)', () => {
  it.each([
    [{ structured_outputs: { json: { type: 5 } } }, 'Failed to transform json schema into a grammar: Type should be a string'],
    [
      { structured_outputs: { json: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } } },
      'Failed to transform json schema into a grammar: ',
    ],
    [{ structured_outputs: { json: '{"type": "object",' } }, 'Invalid JSON grammar specification: '],
    [
      { structured_outputs: { json: { type: 'integer', multipleOf: 3 } } },
      'The provided JSON schema contains features not supported by xgrammar: multipleOf at #.',
    ],
    [
      { structured_outputs: { json: { type: 'object', properties: { a: { type: 'array', uniqueItems: true } } } } },
      'not supported by xgrammar: uniqueItems at #/properties/a.',
    ],
    [{ structured_outputs: { json: { type: 'string', format: 'credit-card' } } }, 'not supported by xgrammar: format "credit-card" at #.'],
    [{ structured_outputs: { json: { type: 'integer', minimum: 5, maximum: 4 } } }, 'allows no integer at #'],
    [
      { structured_outputs: { json: { type: 'object', patternProperties: { '^x': { type: 'integer' } } } } },
      'not supported by xgrammar: patternProperties at #.',
    ],
    [
      { structured_outputs: { json: { type: 'object', properties: { 'a"b': { type: 'integer' } } } } },
      'not supported by xgrammar: a property name with a quote, backslash or control character ("a\\"b") at #.',
    ],
    [
      { structured_outputs: { json: { type: 'string', format: 'json-pointer' } } },
      'not supported by xgrammar: format "json-pointer" at #.',
    ],
    [
      { structured_outputs: { json: { type: 'object', properties: { p: { pattern: '^a$' } } } } },
      'not supported by xgrammar: pattern without "type": "string" at #/properties/p.',
    ],
    [
      { structured_outputs: { json: { type: 'string', pattern: '^a+$', maxLength: 3 } } },
      'not supported by xgrammar: pattern together with minLength or maxLength at #.',
    ],
    [
      { structured_outputs: { json: { type: 'string', pattern: '(a)\\1' } } },
      'not supported by xgrammar: a pattern Hearth cannot use (backreferences are not supported) at #.',
    ],
    [{ structured_outputs: { json: { type: 'number', minimum: 'x' } } }, 'not supported by xgrammar: minimum that is not a number at #.'],
    [{ structured_outputs: { regex: '[a-' } }, 'Failed to transform regex into a grammar: '],
    [{ structured_outputs: { regex: '(ab' } }, 'Failed to transform regex into a grammar: '],
    [{ structured_outputs: { grammar: 'root ::= "a" |' } }, 'Invalid grammar specification: EBNF parser error at line 1'],
    [{ structured_outputs: { grammar: 'start ::= "a"' } }, 'Invalid grammar specification: '],
    [
      { structured_outputs: { structural_tag: '{"type": "structural_tag", "format": {"type": "nope"}}' } },
      'Invalid structural tag specification: format has the unknown type "nope".',
    ],
    [
      { structured_outputs: { structural_tag: { format: { type: 'tag', begin: '<a>', content: { type: 'any_text' } } } } },
      'Invalid structural tag specification: format (tag) needs string "begin" and "end".',
    ],
    [
      {
        structured_outputs: {
          structural_tag: {
            type: 'structural_tag',
            format: {
              type: 'triggered_tags',
              triggers: ['<f'],
              tags: [{ type: 'tag', begin: '<g>', content: { type: 'any_text' }, end: '</g>' }],
            },
          },
        },
      },
      'Invalid structural tag specification: format.tags[0].begin starts with none of the triggers.',
    ],
    [
      { response_format: { type: 'structural_tag', structures: [{ begin: '<a>', end: '</a>' }], triggers: ['<a'] } },
      'Invalid structural tag specification: structures[0] needs "begin", "schema" and "end".',
    ],
    [
      {
        structured_outputs: {
          structural_tag: {
            format: {
              type: 'tag',
              begin: '<a>',
              content: { type: 'json_schema', json_schema: { type: 'integer', multipleOf: 2 } },
              end: '</a>',
            },
          },
        },
      },
      'not supported by xgrammar: multipleOf at #.',
    ],
    [
      {
        structured_outputs: {
          structural_tag: { format: { type: 'tag', begin: '<a>', content: { type: 'grammar', grammar: 'root ::= "x" |' }, end: '</a>' } },
        },
      },
      'Invalid structural tag specification: EBNF parser error',
    ],
    [
      { structured_outputs: { json: person, whitespace_pattern: '(?=x)' } },
      'Failed to transform whitespace_pattern into a grammar: lookaround',
    ],
  ] as [StructuredRequestFields, string][])('%j', async (fields, message) => {
    const e = await refusal(fields);
    expect(e.message).toContain(message);
    expect(e.status).toBe(400);
  });

  it('xgrammar keeps working after refusing (its WASM instance is replaced after an abort)', async () => {
    const before = await compiled({
      structured_outputs: { json: { type: 'object', properties: { k: { type: 'boolean' } }, required: ['k'] } },
    });
    for (let i = 0; i < 30; i++)
      await refusal({ structured_outputs: { json: { type: 'object', properties: { [`p${i}`]: { $ref: '#/$defs/nowhere' } } } } });
    const c = await compiled({ structured_outputs: { regex: 'ok[0-9]' } });
    expect(accepts(c, 'ok7')).toBe(true);
    expect(accepts(c, 'no')).toBe(false);
    // A constraint compiled before the aborts still makes working matchers (on its own instance).
    expect(accepts(before, '{"k": true}')).toBe(true);
    expect(accepts(before, '{"k": 1}')).toBe(false);
  }, 60_000); // 30 WASM aborts and re-instantiations: seconds on a loaded 2-core machine
});

describe('the compiled-grammar cache', () => {
  it('compiles a constraint once per tokenizer; a new key or another tokenizer compiles again', async () => {
    const schema = {
      type: 'object',
      properties: { unique: { type: 'string', const: `cache-test-${Math.random()}` } },
      required: ['unique'],
    };
    const before = { ...grammarCacheStats };
    const first = await compiled({ structured_outputs: { json: schema } });
    const second = await compiled({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
    expect(grammarCacheStats.misses - before.misses).toBe(1);
    expect(grammarCacheStats.hits - before.hits).toBe(1);
    await compiled({ structured_outputs: { json: schema, disable_any_whitespace: false } });
    await compiled({ structured_outputs: { json: schema } }, await structuredModel('tiny-chat'));
    expect(grammarCacheStats.misses - before.misses).toBe(3);
    // Both compiled constraints make independent matchers.
    const a = first.createConstraint();
    const b = second.createConstraint();
    expect(feedText(a, model, '{"unique"')).toBe(-1);
    expect(nextAllowed(b, model.vocabSize)).toEqual(nextAllowed(second.createConstraint(), model.vocabSize));
    a.dispose();
    b.dispose();
  });
});
