// The structured-output budget (issue 10): constructs that make xgrammar's uninterruptible
// compile run for minutes are refused with a 400 naming the field before it starts, while the
// constraints people write (and one large flat repetition, which xgrammar handles cheaply) compile.
import { beforeAll, describe, expect, it } from 'vitest';
import { structuredOutputSpec, type StructuredRequestFields } from '../../../src/service/structured/constraint-spec';
import { ConstraintError } from '../../../src/service/structured/errors';
import { GRAMMAR_LIMITS, grammarOverBudget } from '../../../src/service/structured/grammar-budget';
import { compileStructuredOutput, type StructuredModel } from '../../../src/service/structured/grammar-compiler';
import { structuredModel } from '../structured/decode-helpers';

const over = (fields: StructuredRequestFields) => grammarOverBudget(structuredOutputSpec(fields)!.constraint);

describe('grammarOverBudget', () => {
  it.each([
    ['(ab|cd){0,100000000}', /repeats 100000000 times at position 7, over Hearth's limit of 100000/],
    ['((ab){0,1000}){0,1000}', /counts multiply to 1000000/],
    ['(((ab){0,30}){0,30}){0,30}', /counts multiply to 27000/],
  ])('refuses the regex %s', (regex, reason) => {
    expect(over({ structured_outputs: { regex } })).toMatch(reason);
  });

  it.each(['(ab|cd){0,100000}', '((ab){0,100}){0,100}', '[{]{0,5}\\{{3}', '\\d{3}-\\d{4}', '(a{2}|b)*c{5}'])(
    'accepts the regex %s',
    (regex) => {
      expect(over({ structured_outputs: { regex } })).toBeNull();
    },
  );

  it('reads EBNF string literals as literals', () => {
    expect(over({ structured_outputs: { grammar: 'root ::= ("ab" | "cd"){0,100000000}' } })).toMatch(/the grammar repeats 100000000 times/);
    expect(over({ structured_outputs: { grammar: 'root ::= ("{0,100000000}" "(" ){0,20}' } })).toBeNull();
    expect(over({ structured_outputs: { grammar: 'root ::= (x{0,1000}){0,1000}\nx ::= "a"' } })).toMatch(/multiply to 1000000/);
  });

  it('walks JSON schemas, naming where the bound is', () => {
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 100_000_000 } } };
    expect(over({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } })).toMatch(
      /maxLength 100000000 at \$\.properties\.name is over Hearth's limit of 10000/,
    );
    expect(over({ structured_outputs: { json: { type: 'array', minItems: 10_000_000 } } })).toMatch(/minItems 10000000 at \$/);
    expect(over({ structured_outputs: { json: { type: 'string', pattern: '^(a{0,1000}){0,1000}$' } } })).toMatch(
      /the pattern at \$\.pattern nests repetitions/,
    );
    expect(over({ structured_outputs: { json: { type: 'object', properties: { maxLength: { type: 'integer' } } } } })).toBeNull();
  });

  it('caps the total of a grammar, not just each construct (issue 26)', () => {
    const strings = (n: number, maxLength: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`s${i}`, { type: 'string', maxLength }])),
    });
    const wide = { response_format: { type: 'json_schema' as const, json_schema: { name: 'w', schema: strings(24, 10_000) } } };
    expect(over(wide)).toMatch(
      /the JSON schema's string length bounds \(200 more for each bounded string\) and pattern counts add up to 244800, over Hearth's limit of 20000 for one grammar/,
    );
    // One string at its own cap fits, as do ten of 1,000; two at the cap do not.
    expect(over({ structured_outputs: { json: strings(1, 10_000) } })).toBeNull();
    expect(over({ structured_outputs: { json: strings(10, 1000) } })).toBeNull();
    expect(over({ structured_outputs: { json: strings(2, 10_000) } })).toMatch(/add up to 20400/);
    // Many small bounded strings cost their fixed part: 200 strings of maxLength 1.
    expect(over({ structured_outputs: { json: strings(200, 1) } })).toMatch(/add up to 40200/);
    // A schema's patterns count with its strings.
    const patterns = {
      type: 'array',
      prefixItems: [
        { type: 'string', pattern: 'a{0,9000}' },
        { type: 'string', pattern: 'b{0,9000}' },
        { type: 'string', maxLength: 2000 },
      ],
    };
    expect(over({ structured_outputs: { json: patterns } })).toMatch(/add up to 20200/);
    // A regex or grammar: its repetition counts, as expanded, add up.
    expect(over({ structured_outputs: { regex: 'a{0,60000}b{0,60000}' } })).toMatch(
      /the regex's repetition counts add up to 120000, over Hearth's limit of 100000 for one grammar/,
    );
    expect(over({ structured_outputs: { grammar: 'root ::= ("a"{0,10}){0,900} "b"{0,95000}' } })).toMatch(
      /the grammar's repetition counts add up to 104010/,
    );
    expect(over({ structured_outputs: { regex: 'a{0,50000}b{0,50000}' } })).toBeNull();
  });

  it('caps the size of the text', () => {
    const choices = Array.from({ length: 30_000 }, (_, i) => `choice number ${i}`);
    expect(over({ structured_outputs: { choice: choices } })).toMatch(
      new RegExp(`over Hearth's limit of ${GRAMMAR_LIMITS.maxSourceChars}`),
    );
  });
});

describe('compileStructuredOutput refuses over budget with a 400 naming the field', () => {
  let model: StructuredModel;
  beforeAll(async () => {
    model = await structuredModel('tiny-qwen3');
  });

  it.each([
    [{ structured_outputs: { regex: '((ab){0,1000}){0,1000}' } }, 'structured_outputs'],
    [
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', maxLength: 100_000_000 } } } },
      'response_format',
    ],
  ] as [StructuredRequestFields, string][])('%o', async (fields, param) => {
    const e = await compileStructuredOutput(structuredOutputSpec(fields)!, model).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ConstraintError);
    expect((e as ConstraintError).param).toBe(param);
    expect((e as Error).message).toMatch(/over Hearth's limit/);
  });
});
