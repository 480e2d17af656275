// Structured outputs through the whole stack: the official `openai` SDK in a page of the origin,
// the Service Worker, the engine worker compiling each constraint with xgrammar (WASM) and the
// engine applying one grammar bitmask per choice and step on WebGPU (SwiftShader here), with the
// bundled tiny-qwen2 model (random weights, no thinking template: every token is constrained).
// What a client observes is checked: JSON documents of several schema shapes validate with ajv
// (response_format json_schema and structured_outputs.json, streamed and not, n choices), regex,
// choice and EBNF outputs match, a completed grammar finishes the choice with "stop", and
// constraints xgrammar or vLLM refuse are 400s naming the field before any generation.
//
// Random weights make the grammar do all the work, so schemas bound what a random walk could
// stretch (maxItems, numeric ranges, enums, maxLength) and JSON whitespace is disabled: the test
// checks that the output obeys the constraint, not what a trained model would choose.
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenAI, startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const MODEL = 'hearth/tiny-qwen2';
const ajv = new Ajv2020({ strict: false });

/** Runs `requests` (chat.completions.create bodies) concurrently through the SDK in the page; streamed ones are folded as a client would. */
async function complete(requests: Record<string, unknown>[]): Promise<any[]> {
  return h.page.evaluate(
    async ({ key, requests }) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({
        baseURL: `${location.origin}/v1`,
        apiKey: key,
        dangerouslyAllowBrowser: true,
        maxRetries: 0,
        timeout: 170_000,
      });
      return Promise.all(
        requests.map(async (body) => {
          try {
            if (!body.stream) return { response: await client.chat.completions.create(body) };
            const contents: string[] = [];
            const finishes: (string | null)[] = [];
            for await (const chunk of await client.chat.completions.create(body)) {
              for (const c of chunk.choices) {
                contents[c.index] = (contents[c.index] ?? '') + (c.delta?.content ?? '');
                if (c.finish_reason) finishes[c.index] = c.finish_reason;
              }
            }
            return { streamed: { contents, finishes } };
          } catch (e: any) {
            return { error: { status: e.status, param: e.param ?? e.error?.param ?? null, message: e.message } };
          }
        }),
      );
    },
    { key: h.key, requests },
  );
}

const base = { model: MODEL, messages: [{ role: 'user', content: 'Answer in the requested format.' }], temperature: 0 };
const noWhitespace = { structured_outputs: { disable_any_whitespace: true } };

const PERSON = {
  type: 'object',
  properties: {
    name: { enum: ['Ada', 'Alan', 'Grace'] },
    age: { type: 'integer', minimum: 18, maximum: 99 },
    address: {
      type: 'object',
      properties: { city: { enum: ['Paris', 'Oslo'] }, zip: { type: 'integer', minimum: 1000, maximum: 9999 } },
      required: ['city', 'zip'],
      additionalProperties: false,
    },
    active: { type: 'boolean' },
  },
  required: ['name', 'age', 'address', 'active'],
  additionalProperties: false,
};

const READINGS = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      id: { type: 'integer', minimum: 0, maximum: 9 },
      level: { enum: ['low', 'high'] },
      note: { type: 'string', maxLength: 3 },
    },
    required: ['id', 'level'],
    additionalProperties: false,
  },
  minItems: 1,
  maxItems: 2,
};

const TAGS = {
  type: 'object',
  properties: { tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 3 }, ok: { type: 'boolean' } },
  required: ['tags', 'ok'],
  additionalProperties: false,
};

describe('structured outputs through /v1/chat/completions', () => {
  it('JSON schemas of several shapes give documents that validate, streamed and not, in every choice', async () => {
    const [person, readings, tags, streamedPerson] = await complete([
      {
        ...base,
        ...noWhitespace,
        max_tokens: 60,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
      },
      { ...base, max_tokens: 60, structured_outputs: { json: READINGS, disable_any_whitespace: true, _backend: 'xgrammar' } },
      {
        ...base,
        ...noWhitespace,
        max_tokens: 40,
        n: 2,
        temperature: 1,
        seed: 11,
        response_format: { type: 'json_schema', json_schema: { name: 'tags', schema: TAGS } },
      },
      {
        ...base,
        ...noWhitespace,
        max_tokens: 60,
        stream: true,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
      },
    ]);
    for (const r of [person, readings, tags]) expect(r.error).toBeUndefined();
    const valid = (schema: object, text: string) => {
      const doc = JSON.parse(text);
      expect(ajv.validate(schema, doc), `${text}: ${ajv.errorsText()}`).toBe(true);
    };
    const p = person.response.choices[0];
    valid(PERSON, p.message.content);
    expect(p.finish_reason).toBe('stop');
    valid(READINGS, readings.response.choices[0].message.content);
    expect(tags.response.choices).toHaveLength(2);
    for (const c of tags.response.choices) {
      valid(TAGS, c.message.content);
      expect(c.finish_reason).toBe('stop');
    }
    // The same greedy request streamed: the deltas join to the same document.
    expect(streamedPerson.streamed.contents[0]).toBe(p.message.content);
    expect(streamedPerson.streamed.finishes[0]).toBe('stop');
  });

  it('regex, choice and EBNF grammar outputs match their constraint', async () => {
    const grammar = ['root ::= greeting " " name "!"', 'greeting ::= "hi" | "hello"', 'name ::= [A-Z] [a-z] [a-z]?'].join('\n');
    const [regex, regexStream, choice, ebnf, ebnfStream] = await complete([
      { ...base, max_tokens: 20, structured_outputs: { regex: '[a-c]{2,4}-[0-9]{2}' } },
      { ...base, max_tokens: 20, stream: true, n: 2, temperature: 1, seed: 5, structured_outputs: { regex: '(yes|no), [0-9]' } },
      { ...base, max_tokens: 10, n: 3, temperature: 1, seed: 2, structured_outputs: { choice: ['red', 'green', 'blue'] } },
      { ...base, max_tokens: 20, structured_outputs: { grammar } },
      { ...base, max_tokens: 20, stream: true, structured_outputs: { grammar } },
    ]);
    expect(regex.response.choices[0].message.content).toMatch(/^[a-c]{2,4}-[0-9]{2}$/);
    expect(regex.response.choices[0].finish_reason).toBe('stop');
    expect(regexStream.streamed.contents).toHaveLength(2);
    for (const text of regexStream.streamed.contents) expect(text).toMatch(/^(yes|no), [0-9]$/);
    expect(regexStream.streamed.finishes).toEqual(['stop', 'stop']);
    for (const c of choice.response.choices) expect(['red', 'green', 'blue']).toContain(c.message.content);
    const text = ebnf.response.choices[0].message.content;
    expect(text).toMatch(/^(hi|hello) [A-Z][a-z]{1,2}!$/);
    expect(ebnfStream.streamed.contents[0]).toBe(text);
  });

  it('refuses constraints that cannot be honoured with a 400 naming the field', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const results = await complete([
      { ...base, max_tokens: 4, structured_outputs: { regex: '(unclosed' } },
      {
        ...base,
        max_tokens: 4,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'nonsense' } } } },
        },
      },
      { ...base, max_tokens: 4, structured_outputs: { grammar: 'root ::= "a" |' } },
      { ...base, max_tokens: 4, structured_outputs: { choice: ['a'], _backend: 'outlines' } },
      { ...base, max_tokens: 4, structured_outputs: { json: { type: 'object' }, regex: 'a+' } },
      { ...base, max_tokens: 4, tools, tool_choice: 'required', response_format: { type: 'json_object' } },
      { ...base, max_tokens: 4, use_beam_search: true, n: 2, structured_outputs: { choice: ['a', 'b'] } },
    ]);
    for (const r of results) {
      expect(r.response, JSON.stringify(r.response)).toBeUndefined();
      expect(r.error.status).toBe(400);
    }
    const [regex, schema, grammar, backend, twoKinds, toolsAndFormat, beams] = results.map((r) => r.error);
    expect(regex.param).toMatch(/^structured_outputs/);
    expect(schema.param).toMatch(/^response_format/);
    expect(grammar.param).toMatch(/^structured_outputs/);
    expect(backend.message).toMatch(/xgrammar/);
    expect(twoKinds.message).toMatch(/only use one kind of constraints/);
    expect(toolsAndFormat.message).toMatch(/either use constraints for structured outputs or tools/);
    expect(beams.message).toMatch(/use_beam_search cannot be combined with structured outputs/);
  });
});
