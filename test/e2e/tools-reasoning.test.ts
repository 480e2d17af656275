// Tool calls and reasoning through the whole stack: the official `openai` SDK in a page of the
// origin, the Service Worker, the engine worker and WebGPU (SwiftShader here), with the bundled
// tiny-qwen3 model, whose template renders tools, Hermes `<tool_call>` turns, tool results and
// `<think>` blocks as Qwen3's does.
//
// Its weights are random, so nothing here relies on what the model would choose:
// - named and "required" tool choices are enforced by their JSON-schema grammar;
// - "auto" calls are made to appear with a grammar that writes Hermes tags, and the parser turns
//   them into tool_calls (it does not know a grammar wrote them);
// - reasoning is made to appear with logit_bias on two tokens ("x" above `</think>`) and
//   bad_words "xxxx": the output is x's until the ban makes `</think>` the likeliest token, then
//   the answer, whose grammar starts only after `</think>` (as vLLM applies structured outputs
//   to the answer only).
// Assertions are on what a client sees: tool_calls with ids, names and arguments valid for the
// tool's schema, finish_reason "tool_calls", streamed tool-call deltas that fold into the same
// calls, reasoning_content split at `</think>` (streamed and not), include_reasoning, and
// enable_thinking reaching the template.
import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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

const MODEL = 'hearth/tiny-qwen3';
const ajv = new Ajv2020({ strict: false });

const tokenizer = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../public/models/tiny-qwen3/tokenizer.json', import.meta.url)), 'utf8'),
);
const added = (content: string): number => tokenizer.added_tokens.find((t: { content: string }) => t.content === content).id;
const X = tokenizer.model.vocab.x as number;
const THINK_END = added('</think>');

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { enum: ['Paris', 'Oslo'] }, unit: { enum: ['c', 'f'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const TIME = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'], additionalProperties: false },
  },
};
const TOOLS = [WEATHER, TIME];
const schemaOf = (name: string) => TOOLS.find((t) => t.function.name === name)!.function.parameters;

const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
const base = { model: MODEL, messages: ask, temperature: 0 };
/** No reasoning block (the template pre-fills an empty one): the grammar starts at the first token. */
const noThinking = { chat_template_kwargs: { enable_thinking: false } };

/** A Hermes tool call as the template writes one. */
const hermes = (name: string, args: string) => `"<tool_call>\\n{\\"name\\": \\"${name}\\", \\"arguments\\": " ${args} "}\\n</tool_call>"`;
const weatherArgs = `"{\\"city\\": \\"" ("Paris" | "Oslo") "\\", \\"unit\\": \\"c\\"}"`;
const AUTO_GRAMMAR = `root ::= "Checking. " ${hermes('get_weather', weatherArgs)}`;
const WEATHER_TAG = {
  type: 'tag',
  begin: '<tool_call>\n{"name": "get_weather", "arguments": ',
  // A regex rather than the schema: a schema's free JSON whitespace lets random weights ramble.
  content: { type: 'regex', pattern: '\\{"city": "(Paris|Oslo)", "unit": "[cf]"\\}' },
  end: '}\n</tool_call>',
};
const TWO_CALLS_GRAMMAR = `root ::= ${hermes('get_weather', weatherArgs)} "\\n" ${hermes('get_time', '"{\\"zone\\": \\"UTC\\"}"')}`;

/**
 * Runs the request bodies concurrently through the SDK in the page. A streamed one is folded as
 * a client folds it: content, reasoning and tool calls (by index: the first delta's id and name,
 * argument pieces joined), plus the finish reason and the number of chunks with tool-call deltas.
 */
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
            const folded = {
              content: null as string | null,
              reasoning: null as string | null,
              toolCalls: [] as any[],
              finish: null as string | null,
              toolCallChunks: 0,
              reasoningAfterContent: false,
            };
            for await (const chunk of await client.chat.completions.create(body)) {
              const c = chunk.choices[0];
              if (!c) continue;
              const d = c.delta ?? {};
              if (d.reasoning_content) {
                if (folded.content) folded.reasoningAfterContent = true;
                folded.reasoning = (folded.reasoning ?? '') + d.reasoning_content;
              }
              if (d.content) folded.content = (folded.content ?? '') + d.content;
              if (d.tool_calls?.length) folded.toolCallChunks++;
              for (const t of d.tool_calls ?? []) {
                const call = (folded.toolCalls[t.index] ??= { id: null, name: null, arguments: '' });
                if (t.id) call.id = t.id;
                if (t.function?.name) call.name = t.function.name;
                if (t.function?.arguments) call.arguments += t.function.arguments;
              }
              if (c.finish_reason) folded.finish = c.finish_reason;
            }
            return { streamed: folded };
          } catch (e: any) {
            return { error: { status: e.status, message: e.message } };
          }
        }),
      );
    },
    { key: h.key, requests },
  );
}

function expectValidCall(call: { id?: string; type?: string; function: { name: string; arguments: string } }) {
  expect(call.id).toMatch(/^chatcmpl-tool-/);
  expect(TOOLS.map((t) => t.function.name)).toContain(call.function.name);
  const args = JSON.parse(call.function.arguments);
  expect(ajv.validate(schemaOf(call.function.name), args), `${call.function.arguments}: ${ajv.errorsText()}`).toBe(true);
}

describe('tool calls through /v1/chat/completions', () => {
  it('named and "required" tool choices are enforced by their schema, streamed and not', async () => {
    const named = { type: 'function', function: { name: 'get_weather' } };
    const shared = { ...base, ...noThinking, tools: TOOLS, structured_outputs: { disable_any_whitespace: true } };
    const [n, ns, r, rs] = await complete([
      { ...shared, max_tokens: 30, tool_choice: named },
      { ...shared, max_tokens: 30, tool_choice: named, stream: true },
      { ...shared, max_tokens: 60, tool_choice: 'required', parallel_tool_calls: false },
      { ...shared, max_tokens: 60, tool_choice: 'required', stream: true },
    ]);
    const nc = n.response.choices[0];
    expect(nc.finish_reason).toBe('tool_calls');
    expect(nc.message.tool_calls).toHaveLength(1);
    expect(nc.message.tool_calls[0].function.name).toBe('get_weather');
    expectValidCall(nc.message.tool_calls[0]);
    expect(nc.message.content ?? '').toBe('');
    // Streamed: one call whose argument pieces join to the same (greedy) arguments.
    expect(ns.streamed.finish).toBe('tool_calls');
    expect(ns.streamed.toolCalls).toHaveLength(1);
    expect(ns.streamed.toolCalls[0].name).toBe('get_weather');
    expect(ns.streamed.toolCalls[0].id).toMatch(/^chatcmpl-tool-/);
    expect(ns.streamed.toolCalls[0].arguments).toBe(nc.message.tool_calls[0].function.arguments);

    const rc = r.response.choices[0];
    expect(rc.finish_reason).toBe('tool_calls');
    expect(rc.message.tool_calls).toHaveLength(1); // parallel_tool_calls: false
    expectValidCall(rc.message.tool_calls[0]);
    expect(rs.streamed.finish).toBe('tool_calls');
    expect(rs.streamed.toolCalls.length).toBeGreaterThanOrEqual(1);
    for (const call of rs.streamed.toolCalls) expectValidCall({ id: call.id, function: { name: call.name, arguments: call.arguments } });
  });

  it('"auto" parses Hermes <tool_call> output into tool_calls and tool-call deltas; "none" leaves it as content', async () => {
    // The random model spells the tags a character or two per token: room for ~2 tokens per character.
    const shared = { ...base, ...noThinking, tools: TOOLS, max_tokens: 100 };
    const [auto, autoStream, two, twoSerial, none, tagged] = await complete([
      { ...shared, structured_outputs: { grammar: AUTO_GRAMMAR } },
      { ...shared, tool_choice: 'auto', structured_outputs: { grammar: AUTO_GRAMMAR }, stream: true },
      { ...shared, max_tokens: 180, structured_outputs: { grammar: TWO_CALLS_GRAMMAR } },
      { ...shared, max_tokens: 180, parallel_tool_calls: false, structured_outputs: { grammar: TWO_CALLS_GRAMMAR } },
      { ...shared, tool_choice: 'none', structured_outputs: { grammar: AUTO_GRAMMAR } },
      { ...shared, max_tokens: 120, response_format: { type: 'structural_tag', format: WEATHER_TAG } },
    ]);
    const a = auto.response.choices[0];
    expect(a.finish_reason).toBe('tool_calls');
    expect(a.message.content.trim()).toBe('Checking.');
    expect(a.message.tool_calls).toHaveLength(1);
    expect(a.message.tool_calls[0].type).toBe('function');
    expect(a.message.tool_calls[0].function.name).toBe('get_weather');
    expectValidCall(a.message.tool_calls[0]);

    const s = autoStream.streamed;
    expect(s.finish).toBe('tool_calls');
    expect(s.content.trim()).toBe('Checking.');
    expect(s.toolCalls).toHaveLength(1);
    expect(s.toolCalls[0].name).toBe('get_weather');
    expect(JSON.parse(s.toolCalls[0].arguments)).toEqual(JSON.parse(a.message.tool_calls[0].function.arguments));
    expect(s.toolCallChunks).toBeGreaterThanOrEqual(1);

    expect(two.response.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_weather', 'get_time']);
    const ids = two.response.choices[0].message.tool_calls.map((c: any) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(twoSerial.response.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_weather']);

    const n = none.response.choices[0];
    expect(n.finish_reason).toBe('stop');
    expect(n.message.tool_calls ?? []).toEqual([]);
    expect(n.message.content).toContain('<tool_call>');

    // A structural tag (xgrammar's format) writing the Hermes call around the arguments.
    const t = tagged.response.choices[0];
    expect(t.finish_reason).toBe('tool_calls');
    expect(t.message.tool_calls).toHaveLength(1);
    expect(t.message.tool_calls[0].function.name).toBe('get_weather');
    expectValidCall(t.message.tool_calls[0]);
  });

  it('a multi-turn tool conversation renders the call and its result through the template', async () => {
    const [first] = await complete([
      { ...base, ...noThinking, tools: TOOLS, max_tokens: 100, structured_outputs: { grammar: AUTO_GRAMMAR } },
    ]);
    const assistant = first.response.choices[0].message;
    const call = assistant.tool_calls[0];
    const messages = [
      ...ask,
      { role: 'assistant', content: assistant.content, tool_calls: assistant.tool_calls },
      { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' },
    ];
    const [second, withoutResult] = await complete([
      { ...base, ...noThinking, messages, tools: TOOLS, max_tokens: 3, return_token_ids: true },
      { ...base, ...noThinking, messages: [...ask], tools: TOOLS, max_tokens: 3, return_token_ids: true },
    ]);
    const prompt: number[] = second.response.prompt_token_ids;
    // The assistant turn's call and the tool result are in the prompt, as the template's tags.
    expect(prompt).toContain(added('<tool_call>'));
    expect(prompt).toContain(added('<tool_response>'));
    expect(withoutResult.response.prompt_token_ids).not.toContain(added('<tool_response>'));
    expect(prompt.length).toBeGreaterThan(withoutResult.response.prompt_token_ids.length);
    expect(second.response.choices[0].message.role).toBe('assistant');
  });
});

describe('reasoning through /v1/chat/completions', () => {
  it('splits <think> reasoning from the content, streamed and not, and structured outputs start after </think>', async () => {
    const thinking = {
      ...base,
      temperature: 1,
      seed: 3,
      max_tokens: 30,
      logit_bias: { [X]: 22, [THINK_END]: 15 },
      bad_words: ['xxxx'],
      return_token_ids: true,
    };
    const choice = { structured_outputs: { choice: ['yes', 'no'] } };
    const [full, streamed, hidden, off, tool] = await complete([
      { ...thinking, ...choice },
      { ...thinking, ...choice, stream: true },
      { ...thinking, ...choice, include_reasoning: false },
      { ...thinking, ...noThinking, max_tokens: 6 },
      { ...thinking, tools: TOOLS, structured_outputs: { grammar: AUTO_GRAMMAR }, max_tokens: 120 },
    ]);
    const c = full.response.choices[0];
    const end = c.token_ids.indexOf(THINK_END);
    expect(end).toBeGreaterThan(0);
    // Everything before </think> is reasoning (x tokens only), the answer is the grammar's.
    expect(c.message.reasoning_content).toBe('x'.repeat(end));
    expect(c.message.reasoning).toBe(c.message.reasoning_content);
    expect(['yes', 'no']).toContain(c.message.content);
    expect(c.finish_reason).toBe('stop');

    expect(streamed.streamed.reasoning ?? '').toBe(c.message.reasoning_content);
    expect(streamed.streamed.content).toBe(c.message.content);
    expect(streamed.streamed.reasoningAfterContent).toBe(false);

    const hc = hidden.response.choices[0];
    expect(hc.message.reasoning_content ?? null).toBeNull();
    expect(hc.message.content).toBe(c.message.content);

    // enable_thinking: false reaches the template (it pre-fills an empty block): nothing is reasoning.
    const oc = off.response.choices[0];
    expect(oc.message.reasoning_content ?? null).toBeNull();
    expect(oc.message.content).toMatch(/^(x|<\/think>)+$/);

    // Tool calls are parsed from the content after the reasoning.
    const tc = tool.response.choices[0];
    expect(tc.message.reasoning_content).toMatch(/^x*$/);
    expect(tc.message.tool_calls).toHaveLength(1);
    expectValidCall(tc.message.tool_calls[0]);
    expect(tc.finish_reason).toBe('tool_calls');
  });
});
