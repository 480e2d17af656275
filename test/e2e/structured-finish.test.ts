// Structured outputs that finish (issue 13), through the whole stack with the bundled JSON model
// (hearth/tiny-json: the default tiny-chat trained further on small JSON objects and one add-tool
// call, docs/training.md stage 4; issue 27 kept that stage out of the default) at temperature 1,
// as a new user would call it: over 20 seeds each, a named tool call with two integer arguments,
// tool_choice "required" and the JSON schema of a person {name, age, tags} must finish within 200
// tokens in at least 19 runs, and every finished output must validate against its schema (ajv).
// With vLLM's default JSON whitespace none of the named tool calls finished in 5 of 5 seeds: the
// model wrote spaces and newlines until the limit; with compact whitespace but unbounded
// integers, 16 of 20 wrote digits until it (README "JSON numbers are bounded"). Outputs that did
// not finish are printed for the closing note.
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { hearthWithOpenAI } from './hearth-fixture';

const hearth = hearthWithOpenAI();

const MODEL = 'hearth/tiny-json';
const SEEDS = Array.from({ length: 20 }, (_, i) => 1000 + i);
const ajv = new Ajv2020({ strict: false });

const ADD = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] };
const TOOLS = [{ type: 'function', function: { name: 'add', description: 'Adds two integers.', parameters: ADD } }];
const PERSON = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
  required: ['name', 'age', 'tags'],
};

interface Run {
  finish: string | null;
  content: string | null;
  calls: Array<{ name: string; arguments: string }>;
  tokens: number;
}

/**
 * One streamed request per seed, concurrently, through the SDK in the page, folded as a client
 * would (streamed, so a slow software adapter never meets the browser's limit on how long a
 * Service Worker may take to start a response).
 */
async function runSeeds(body: Record<string, unknown>, seeds = SEEDS): Promise<Run[]> {
  const h = hearth.current;
  return h.page.evaluate(
    async ({ key, body, seeds }) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({
        baseURL: `${location.origin}/v1`,
        apiKey: key,
        dangerouslyAllowBrowser: true,
        maxRetries: 0,
        timeout: 1_800_000,
      });
      return Promise.all(
        seeds.map(async (seed: number) => {
          const run = {
            finish: null as string | null,
            content: null as string | null,
            calls: [] as Array<{ name: string; arguments: string }>,
            tokens: 0,
          };
          for await (const chunk of await client.chat.completions.create({
            ...body,
            seed,
            stream: true,
            stream_options: { include_usage: true },
          })) {
            if (chunk.usage) run.tokens = chunk.usage.completion_tokens;
            const c = chunk.choices[0];
            if (!c) continue;
            if (c.delta?.content) run.content = (run.content ?? '') + c.delta.content;
            for (const t of c.delta?.tool_calls ?? []) {
              run.calls[t.index] ??= { name: '', arguments: '' };
              if (t.function?.name) run.calls[t.index].name = t.function.name;
              if (t.function?.arguments) run.calls[t.index].arguments += t.function.arguments;
            }
            if (c.finish_reason) run.finish = c.finish_reason;
          }
          return run;
        }),
      );
    },
    { key: h.key, body, seeds },
  );
}

const base = { model: MODEL, temperature: 1, max_tokens: 200 };

function report(kind: string, runs: Run[], finished: (r: Run) => boolean): void {
  const left = runs.filter((r) => !finished(r));
  console.log(`${kind}: ${runs.length - left.length} of ${runs.length} finished; tokens ${runs.map((r) => r.tokens).join(' ')}`);
  for (const r of left)
    console.log(`  unfinished (${r.finish}, ${r.tokens} tokens): ${JSON.stringify(r.calls.length ? r.calls : r.content)}`);
}

describe('structured outputs finish with the bundled JSON model at temperature 1', () => {
  it('a named tool call with integer arguments', async () => {
    const runs = await runSeeds({
      ...base,
      messages: [{ role: 'user', content: 'What is 3 + 4?' }],
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'add' } },
    });
    const finished = (r: Run) => r.finish !== 'length';
    report('named tool call', runs, finished);
    expect(runs.filter(finished).length).toBeGreaterThanOrEqual(19);
    for (const r of runs.filter(finished)) {
      expect(r.calls, JSON.stringify(r)).toHaveLength(1);
      expect(r.calls[0].name).toBe('add');
      expect(ajv.validate(ADD, JSON.parse(r.calls[0].arguments)), r.calls[0].arguments).toBe(true);
    }
  }, 1_800_000);

  it('tool_choice "required"', async () => {
    const runs = await runSeeds({
      ...base,
      messages: [{ role: 'user', content: 'What is 5 + 2?' }],
      tools: TOOLS,
      tool_choice: 'required',
    });
    const finished = (r: Run) => r.finish !== 'length';
    report('tool_choice required', runs, finished);
    expect(runs.filter(finished).length).toBeGreaterThanOrEqual(19);
    for (const r of runs.filter(finished)) {
      expect(r.calls.length, JSON.stringify(r)).toBeGreaterThanOrEqual(1);
      for (const call of r.calls) {
        expect(call.name).toBe('add');
        expect(ajv.validate(ADD, JSON.parse(call.arguments)), call.arguments).toBe(true);
      }
    }
  }, 1_800_000);

  // tiny-json learned small JSON objects in its training stage (docs/training.md stage 4,
  // scripts/train-demo-json.ts). tiny-chat knows only one-digit sums and writes random tokens
  // inside the free strings (`{"name": "]9049 +3 cameras18...`), rarely the closing quote, so 0
  // of 20 names ended before the limit: whitespace and numbers are bounded by the grammar, a free
  // string only by the model.
  it('the JSON schema of a person', async () => {
    const runs = await runSeeds({
      ...base,
      messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
    });
    const finished = (r: Run) => r.finish === 'stop';
    report('person schema', runs, finished);
    expect(runs.filter(finished).length).toBeGreaterThanOrEqual(19);
    for (const r of runs.filter(finished)) expect(ajv.validate(PERSON, JSON.parse(r.content!)), r.content!).toBe(true);
  }, 1_800_000);
});
