// Canaries for Hearth's workarounds of @mlc-ai/web-xgrammar 0.1.27 bugs (package.json pins that
// version). Each runs xgrammar's own path, without Hearth's rewrite, on the input its workaround
// exists for, and asserts that the bug is still there. When an upgrade fixes a bug, its canary
// fails saying "xgrammar fixed <bug>: delete <workaround>": delete the workaround and the canary,
// do not flip the assertion. The package runs as XGrammarRuntime evaluates it (its own code; the
// one added line only hands out the binding, xgrammar-runtime.ts).
import { describe, expect, it } from 'vitest';
import { XGrammarRuntime, type XGrammarLib } from '../../../src/service/structured/xgrammar-runtime';

/** Runs `fn` on the package; an abort inside comes back as the raw error it threw. */
async function raw<T>(fn: (lib: XGrammarLib) => Promise<T>): Promise<{ value?: T; error?: unknown }> {
  const runtime = await XGrammarRuntime.load();
  let error: unknown;
  const value = await runtime
    .run(async (lib) => {
      try {
        return await fn(lib);
      } catch (e) {
        error = e;
        throw e;
      }
    })
    .catch(() => undefined);
  return error === undefined ? { value } : { error };
}

/** Whether xgrammar's own grammar for `schema` (JSON text, any whitespace) accepts `text` whole. */
async function schemaAccepts(schema: unknown, text: string): Promise<boolean> {
  const { value, error } = await raw(async (lib) =>
    lib.Testings.isGrammarAcceptString(await lib.Grammar.fromJSONSchema(JSON.stringify(schema)), text),
  );
  if (error !== undefined) throw error;
  return value!;
}

const fixed = (bug: string, workaround: string) => `xgrammar fixed ${bug}: delete ${workaround}`;

describe('numeric-ranges.ts: xgrammar 0.1.27 writes unsound grammars for numeric bounds', () => {
  const workaround =
    'numeric-ranges.ts and the bounds rewrite in json-schema-support.ts (extractHearthRules) once every numeric canary fails';
  it.each([
    // [bug, schema, the text xgrammar wrongly accepts, a text its grammar does refuse]
    ['an exclusive bound accepted as inclusive', { type: 'number', exclusiveMaximum: 1 }, '1', '2'],
    ['any character in place of the dot of a fractional bound', { type: 'number', minimum: 10.5 }, '10{5', '9'],
    ['a bare "-" for an integer with only a negative minimum', { type: 'integer', minimum: -5 }, '-', '1.5'],
    ['a fraction above the maximum between two bounds', { type: 'number', minimum: 0, maximum: 1 }, '1.4', '2'],
  ])('%s', async (bug, schema, text, refused) => {
    expect(await schemaAccepts(schema, refused)).toBe(false);
    expect(await schemaAccepts(schema, text), fixed(`${bug} (${JSON.stringify(schema)} accepted ${text})`, workaround)).toBe(true);
  });
});

describe('regex-ebnf.ts', () => {
  it('whitespace as its own rule: a list accepts items without their comma', async () => {
    const { value, error } = await raw(async (lib) => {
      const schema = { type: 'array', items: { type: 'object', properties: { b: { type: 'integer' } }, required: ['b'] } };
      const ebnf = await lib.Testings._jsonSchemaToEBNF(JSON.stringify(schema), true, -1, undefined, true);
      // The same whitespace xgrammar writes inline, as a rule of its own (as xgrammar prints a regex).
      const grammar = await lib.Grammar.fromEBNF(`${ebnf.split('[ \\n\\t]*').join('ws')}\nws ::= [ \\n\\t]*\n`);
      return Promise.all(['[{"b":1}{"b":2}]', '[{"b":1},{"b":2}]'].map((text) => lib.Testings.isGrammarAcceptString(grammar, text)));
    });
    expect(error).toBeUndefined();
    const [withoutComma, withComma] = value!;
    expect(withComma).toBe(true);
    expect(
      withoutComma,
      fixed(
        'matching a possibly-empty rule between list items ([{"b":1}{"b":2}] accepted)',
        'the inline translation of whitespace_pattern (regexToEbnf in regex-ebnf.ts, withWhitespace in ebnf.ts) and let the pattern be a rule',
      ),
    ).toBe(true);
  });

  it("a schema pattern is matched against the raw JSON text, so '.' writes a bare quote or newline", async () => {
    const workaround = 'regexToJsonStringEbnf (regex-ebnf.ts) and the pattern rewrite in json-schema-support.ts';
    expect(
      await schemaAccepts({ type: 'string', pattern: '.*' }, '"a"b"'),
      fixed('patterns writing a bare quote ("a"b" accepted)', workaround),
    ).toBe(true);
    expect(await schemaAccepts({ type: 'string', pattern: '.*' }, '"a\nb"'), fixed('patterns writing a raw newline', workaround)).toBe(
      true,
    );
  });
});

describe('json-schema-support.ts', () => {
  it.each([
    // [keyword, schema, a text the keyword forbids, a text the rest of the schema forbids]
    ['multipleOf', { type: 'integer', multipleOf: 3 }, '4', '"4"'],
    ['uniqueItems', { type: 'array', items: { type: 'integer' }, uniqueItems: true }, '[1, 1]', '["a"]'],
    ['not', { type: 'integer', not: { minimum: 5 } }, '7', '"7"'],
    // oxlint-disable-next-line unicorn/no-thenable -- JSON Schema's if/then keywords, not a promise
    ['if / then', { type: 'integer', if: { minimum: 0 }, then: { minimum: 5 } }, '1', '"1"'],
    [
      'dependentRequired',
      { type: 'object', properties: { a: { type: 'integer' } }, dependentRequired: { a: ['b'] } },
      '{"a": 1}',
      '{"a": "x"}',
    ],
    // (xgrammar reads the node as any JSON value: the object around it shows the grammar in force)
    [
      'allOf with two schemas',
      { type: 'object', properties: { n: { allOf: [{ type: 'integer' }, { minimum: 5 }] } }, required: ['n'] },
      '{"n": 1}',
      '[]',
    ],
  ])('ignores %s silently', async (keyword, schema, text, refused) => {
    expect(await schemaAccepts(schema, refused)).toBe(false);
    const message = fixed(
      `${keyword} (${JSON.stringify(schema)} rejects ${text})`,
      `${keyword} from the refused keywords (UNENFORCED / allOf) in json-schema-support.ts`,
    );
    expect(await schemaAccepts(schema, text), message).toBe(true);
  });

  it('writes a property name holding a quote into the grammar unescaped, and aborts', async () => {
    const schema = { type: 'object', properties: { 'a"b': { type: 'integer' } }, required: ['a"b'] };
    const { error } = await raw((lib) => lib.Grammar.fromJSONSchema(JSON.stringify(schema)));
    expect(
      error,
      fixed('property names with a quote (mlc-ai/xgrammar#655)', 'the property-name refusal in json-schema-support.ts'),
    ).toBeInstanceOf(WebAssembly.RuntimeError);
  });

  it('string formats: json-pointer writes a bare quote, email an invalid escape', async () => {
    expect(
      await schemaAccepts({ type: 'string', format: 'json-pointer' }, '"/a"b"'),
      fixed('format json-pointer ("/a"b" accepted)', 'nothing: add json-pointer to SUPPORTED_STRING_FORMATS in json-schema-support.ts'),
    ).toBe(true);
    expect(
      await schemaAccepts({ type: 'string', format: 'email' }, '"\\"a\\q\\"@b.co"'),
      fixed('format email (the escape \\q accepted)', "Hearth's email rule in json-schema-support.ts"),
    ).toBe(true);
  });
});

describe('utf8-guard.ts: xgrammar 0.1.27 accepts byte sequences that are not UTF-8 inside a string', () => {
  it.each([
    ['an overlong 2-byte form', ['<0xC0>', '<0x80>']],
    ['an overlong 3-byte form', ['<0xE0>', '<0x80>', '<0x80>']],
    ['a surrogate', ['<0xED>', '<0xA0>', '<0x80>']],
  ])('%s', async (what, bytes) => {
    const { value, error } = await raw(async (lib) => {
      // A byte-fallback vocabulary (SentencePiece's <0xNN> tokens) reaches every byte.
      const vocab = ['"', '<0xC0>', '<0xE0>', '<0xED>', '<0x80>', '<0xA0>', '</s>'];
      const info = await lib.TokenizerInfo.createTokenizerInfo(vocab, 'byte_fallback', false, vocab.length, [vocab.length - 1]);
      const compiler = await lib.GrammarCompiler.createGrammarCompiler(info, false);
      const matcher = await lib.GrammarMatcher.createGrammarMatcher(await compiler.compileJSONSchema('{"type": "string"}'));
      const accepted = ['"', ...bytes, '"'].map((token) => matcher.acceptToken(vocab.indexOf(token)));
      matcher.dispose();
      return accepted.every(Boolean);
    });
    expect(error).toBeUndefined();
    expect(
      value,
      fixed(
        `accepting ${what} (${bytes.join(' ')}) in a JSON string`,
        'utf8-guard.ts and its mask in grammar-matcher.ts once every UTF-8 canary fails',
      ),
    ).toBe(true);
  });
});

describe('xgrammar-runtime.ts', () => {
  it('an invalid grammar aborts the WASM instance instead of throwing an error with the reason', async () => {
    const { error } = await raw((lib) => lib.Grammar.fromEBNF('root ::= ("a"'));
    expect(
      error,
      fixed('aborting on invalid input', 'the abort recovery in XGrammarRuntime.run (fatalReason, the instance replacement)'),
    ).toBeInstanceOf(WebAssembly.RuntimeError);
  });

  it("the package's matcher hands out its bitmask only asynchronously", async () => {
    const { value, error } = await raw(async (lib) => {
      const info = await lib.TokenizerInfo.createTokenizerInfo(['a', '</s>'], 'raw', false, 2, [1]);
      const compiler = await lib.GrammarCompiler.createGrammarCompiler(info, false);
      const matcher = await lib.GrammarMatcher.createGrammarMatcher(await compiler.compileGrammar('root ::= "a"'));
      const mask = matcher.getNextTokenBitmask();
      const words = (await mask).length;
      matcher.dispose();
      return { isPromise: mask instanceof Promise, words };
    });
    expect(error).toBeUndefined();
    expect(value!.words).toBe(1);
    expect(
      value!.isPromise,
      fixed('the async-only bitmask', 'the BINDING_LINE patch of the bundle in xgrammar-runtime.ts and use the package getter'),
    ).toBe(true);
  });
});
