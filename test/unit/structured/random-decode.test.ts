// The property the issue asks for, without a GPU: a decode that may pick any token the grammar's
// bitmask allows (a random one, seeded) and that ends by stop yields output that parses and
// validates: JSON schemas of several shapes (validated with ajv) under each whitespace option,
// regex, choice, EBNF and structural tags, on the bundled models' real tokenizers.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTool } from '../../../src/service/chat/request';
import { JSON_WHITESPACE_LIMIT, structuredOutputSpec, type StructuredRequestFields } from '../../../src/service/structured/constraint-spec';
import { compileStructuredOutput, type CompiledConstraint, type StructuredModel } from '../../../src/service/structured/grammar-compiler';
import { requiredToolsSchema } from '../../../src/service/structured/tool-choice-schemas';
import { feedText, randomDecode, structuredModel, type BundledModel } from './decode-helpers';

const SEEDS = 6;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv, ['uuid']);

const models = new Map<BundledModel, StructuredModel>();
beforeAll(async () => {
  for (const name of ['tiny-qwen3', 'tiny-chat'] as const) models.set(name, await structuredModel(name));
});

async function compile(fields: StructuredRequestFields, model: StructuredModel): Promise<CompiledConstraint> {
  return compileStructuredOutput(structuredOutputSpec(fields)!, model);
}

/** Runs SEEDS walks; each must end by stop. */
function walks(c: CompiledConstraint, model: StructuredModel, firstSeed = 1): string[] {
  const out: string[] = [];
  for (let seed = firstSeed; seed < firstSeed + SEEDS; seed++) {
    const matcher = c.createConstraint();
    const result = randomDecode(matcher, model, seed);
    matcher.dispose();
    expect(result.terminated, `seed ${seed}: ${JSON.stringify(result.text.slice(0, 200))}`).toBe(true);
    out.push(result.text);
  }
  return out;
}

/** The whitespace runs between JSON tokens (outside strings), each with the character before it. */
function gaps(text: string): { before: string; run: string }[] {
  const out: { before: string; run: string }[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      i++;
      while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (' \n\t\r'.includes(text[i])) {
      const start = i;
      while (i < text.length && ' \n\t\r'.includes(text[i])) i++;
      out.push({ before: text[start - 1] ?? '', run: text.slice(start, i) });
      continue;
    }
    i++;
  }
  return out;
}

const tools: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', minLength: 1 },
          unit: { enum: ['c', 'f'] },
          days: { type: 'integer', minimum: 1, maximum: 7 },
        },
        required: ['city', 'unit'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'book',
      parameters: {
        type: 'object',
        properties: { slot: { $ref: '#/$defs/slot' } },
        required: ['slot'],
        $defs: {
          slot: {
            type: 'object',
            properties: { day: { type: 'string', format: 'date' }, seats: { type: 'integer', exclusiveMinimum: 0 } },
            required: ['day', 'seats'],
          },
        },
      },
    },
  },
  { type: 'function', function: { name: 'ping' } },
];

interface Shape {
  name: string;
  fields: StructuredRequestFields;
  /** What every output must validate against. */
  schema: object;
}

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    score: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
    role: { enum: ['admin', 'user', 'guest'] },
    address: {
      type: 'object',
      properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city'],
    },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 3 },
    active: { type: 'boolean' },
  },
  required: ['name', 'age', 'role', 'address'],
};
const optional = {
  type: 'object',
  properties: {
    pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'boolean' }], items: false, minItems: 2 },
    counts: { type: 'object', additionalProperties: { type: 'integer', minimum: -3 } },
    id: { type: 'string', format: 'uuid' },
    when: { type: 'string', format: 'date' },
    note: { type: 'string', pattern: '^.{2,5}[^a]\\s?$' },
    quoted: { enum: ['a"b', 'c\\d', 'e\nf'] },
    short: { type: 'string', minLength: 2, maxLength: 4 },
  },
};
const answer = { type: 'object', properties: { answer: { type: 'string' }, sure: { type: 'boolean' } }, required: ['answer', 'sure'] };

const shapes: Shape[] = [
  { name: 'nested object with enums, arrays, bounds and a pattern', fields: { structured_outputs: { json: person } }, schema: person },
  {
    name: 'recursive list through $ref and anyOf',
    fields: {
      structured_outputs: {
        json: {
          type: 'object',
          properties: { head: { $ref: '#/$defs/node' } },
          required: ['head'],
          $defs: {
            node: {
              type: 'object',
              properties: { v: { type: 'integer' }, next: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/node' }] } },
              required: ['v', 'next'],
            },
          },
        },
      },
    },
    schema: {},
  },
  {
    name: 'top-level array of tagged variants',
    fields: {
      structured_outputs: {
        json: {
          type: 'array',
          minItems: 1,
          maxItems: 4,
          items: {
            anyOf: [
              {
                type: 'object',
                properties: { kind: { const: 'point' }, x: { type: 'number', minimum: -2.5, maximum: 2.5 }, y: { type: 'number' } },
                required: ['kind', 'x', 'y'],
              },
              { type: 'object', properties: { kind: { const: 'label' }, text: { type: 'string' } }, required: ['kind', 'text'] },
              { type: 'null' },
            ],
          },
        },
      },
    },
    schema: {},
  },
  {
    name: 'all-optional properties, tuple, map of integers, formats, patterns, escapes',
    fields: { structured_outputs: { json: optional } },
    schema: optional,
  },
  { name: 'json_object', fields: { structured_outputs: { json_object: true } }, schema: { type: 'object' } },
  {
    name: 'response_format json_schema, strict',
    fields: { response_format: { type: 'json_schema', json_schema: { name: 'a', strict: true, schema: answer } } },
    schema: answer,
  },
  {
    name: 'tool_choice "required" (three tools, $defs hoisted)',
    fields: { tools, tool_choice: 'required' },
    schema: requiredToolsSchema(tools, true),
  },
  {
    name: 'tool_choice naming a function',
    fields: { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    schema: tools[0].function.parameters!,
  },
];
for (const s of shapes) if (Object.keys(s.schema).length === 0) s.schema = (s.fields.structured_outputs as { json: object }).json;

const layouts: [string, StructuredRequestFields['structured_outputs']][] = [
  ['default (compact)', {}],
  ['any whitespace (bounded)', { disable_any_whitespace: false }],
  ['disable_any_whitespace', { disable_any_whitespace: true }],
  ['whitespace_pattern', { whitespace_pattern: '(\\n {0,4}| )?' }],
];

describe('JSON schemas: every finished walk parses and validates (ajv)', () => {
  for (const { name, fields, schema } of shapes) {
    for (const [layout, options] of layouts) {
      it(`${name}, ${layout}`, async () => {
        const model = models.get('tiny-qwen3')!;
        const withLayout = fields.structured_outputs
          ? { ...fields, structured_outputs: { ...fields.structured_outputs, ...options } }
          : { ...fields, structured_outputs: options };
        const c = await compile(withLayout, model);
        const validate = ajv.compile(schema);
        for (const text of walks(c, model)) {
          const value = JSON.parse(text);
          expect(validate(value), `${text}\n${ajv.errorsText(validate.errors)}`).toBe(true);
          for (const { before, run } of gaps(text)) {
            if (layout === 'any whitespace (bounded)') expect(run.length, text).toBeLessThanOrEqual(JSON_WHITESPACE_LIMIT);
            if (layout !== 'any whitespace (bounded)' && layout !== 'whitespace_pattern')
              expect([before, run], text).toSatisfy(([b, r]: string[]) => r === ' ' && (b === ',' || b === ':'));
            if (layout === 'whitespace_pattern') expect(run, text).toMatch(/^(?:\n {0,4}| )$/);
          }
          // xgrammar's date format is its syntax (no calendar check): that much is guaranteed.
          if (schema === optional && value.when !== undefined) expect(value.when).toMatch(/^\d{4}-\d{2}-\d{2}$/);
          if (name.includes('required')) {
            // Each call's parameters also validate against its own tool's schema.
            for (const call of value) {
              const tool = tools.find((t) => t.function.name === call.name)!;
              expect(
                ajv.validate(tool.function.parameters ?? { type: 'object', properties: {} }, call.parameters),
                JSON.stringify(call),
              ).toBe(true);
            }
          }
        }
      });
    }
  }

  it('the same property on another tokenizer (tiny-chat)', async () => {
    const model = models.get('tiny-chat')!;
    const validate = ajv.compile(person);
    for (const text of walks(await compile({ structured_outputs: { json: person } }, model), model, 100))
      expect(validate(JSON.parse(text)), text).toBe(true);
  });
});

describe('regex, choice, EBNF', () => {
  it('regex: every finished walk matches the pattern', async () => {
    const model = models.get('tiny-qwen3')!;
    for (const pattern of [
      '[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})?, [0-9]{2,3}',
      '(ab|cd)+x?',
      '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}',
      '[^\\n"]{3,10}!',
    ]) {
      const c = await compile({ structured_outputs: { regex: pattern } }, model);
      for (const text of walks(c, model)) expect(text).toMatch(new RegExp(`^(?:${pattern})$`));
    }
  });

  it('choice: every finished walk is one of the choices', async () => {
    const model = models.get('tiny-qwen3')!;
    const choices = ['positive', 'negative', 'neutral', 'not sure "really"'];
    const c = await compile({ structured_outputs: { choice: choices } }, model);
    const seen = new Set(walks(c, model));
    for (const text of seen) expect(choices).toContain(text);
  });

  it('EBNF: every finished walk is a sentence of the grammar', async () => {
    const model = models.get('tiny-qwen3')!;
    const grammar = 'root ::= expr\nexpr ::= term (("+" | "*") term)*\nterm ::= [0-9]{1,3} | "(" expr ")" | "-" term';
    const c = await compile({ structured_outputs: { grammar } }, model);
    // A recogniser written from the grammar: expr := term (op term)*; term := digits | (expr) | -term.
    const parses = (s: string): boolean => {
      let i = 0;
      const term = (): boolean => {
        if (s[i] === '(') {
          i++;
          if (!expr() || s[i] !== ')') return false;
          i++;
          return true;
        }
        if (s[i] === '-') {
          i++;
          return term();
        }
        const m = /^[0-9]{1,3}/.exec(s.slice(i));
        if (!m) return false;
        i += m[0].length;
        return true;
      };
      const expr = (): boolean => {
        if (!term()) return false;
        while (s[i] === '+' || s[i] === '*') {
          i++;
          if (!term()) return false;
        }
        return true;
      };
      return expr() && i === s.length;
    };
    for (const text of walks(c, model)) expect(parses(text), text).toBe(true);
  });
});

describe('structural tags', () => {
  it('after a trigger, the tag body follows its schema and the tag closes', async () => {
    const model = models.get('tiny-qwen3')!;
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 5 } },
      required: ['city', 'days'],
    };
    const c = await compile(
      {
        structured_outputs: {
          structural_tag: {
            type: 'structural_tag',
            format: {
              type: 'triggered_tags',
              triggers: ['<tool_call>'],
              tags: [{ type: 'tag', begin: '<tool_call>', content: { type: 'json_schema', json_schema: schema }, end: '</tool_call>' }],
            },
          },
        },
      },
      model,
    );
    const validate = ajv.compile(schema);
    for (let seed = 1; seed <= SEEDS; seed++) {
      const matcher = c.createConstraint();
      expect(feedText(matcher, model, 'Checking. <tool_call>')).toBe(-1);
      const rest = randomDecode(matcher, model, seed);
      matcher.dispose();
      // The walk may end only after the tag closed (free text allows a stop token).
      const body = /^([\s\S]*?)<\/tool_call>/.exec(rest.text);
      expect(body, rest.text).not.toBeNull();
      expect(validate(JSON.parse(body![1])), body![1]).toBe(true);
    }
  });
});
