/**
 * Jump-forward decoding (src/engine/generate/jump-forward.ts) on the bundled default model
 * (tiny-chat, SwiftShader in Node) with real xgrammar matchers: for several schemas, greedy
 * decoding with drafts gives the tokens and logprobs (with top logprobs) of plain token-by-token
 * constrained decoding, in fewer decode steps; a seeded sampled run gives the same tokens too (the
 * noise of each position is that of its output index); and an aborted constrained request frees
 * its matcher, rows and blocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import type { ServedModel, TokenConstraint } from '../../src/engine/generate/types';
import { choiceConstraints, prepareStructuredOutput, type StructuredRequestFields } from '../../src/service/structured/structured-output';
import { collect, request, testEngine, type Outcome } from './engine-helpers';

const MODEL = 'hearth/tiny-chat';
let engine: Engine;
let served: ServedModel;

beforeAll(async () => {
  engine = await testEngine({ maxSeqs: 8, kvCacheBytes: 4 << 20 });
  served = await engine.loadModel(MODEL);
});
afterAll(() => engine?.gpu.device.destroy());

const model = () => engine.models[0];
const blocksInUse = () => model().blocks.numBlocks - model().blocks.available;

const add = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] };
const tools = [{ type: 'function' as const, function: { name: 'add', parameters: add } }];
const cases: Array<[string, StructuredRequestFields]> = [
  [
    'a person {name, age, tags}',
    {
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'p',
          schema: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
            required: ['name', 'age', 'tags'],
          },
        },
      },
    },
  ],
  ['a named tool call', { tools, tool_choice: { type: 'function', function: { name: 'add' } } }],
  ['tool_choice "required"', { tools, tool_choice: 'required' }],
  [
    'long fixed keys and an enum',
    {
      structured_outputs: {
        json: {
          type: 'object',
          properties: { first_operand_of_the_sum: { type: 'integer' }, operation_to_apply: { enum: ['addition', 'subtraction'] } },
          required: ['first_operand_of_the_sum', 'operation_to_apply'],
        },
      },
    },
  ],
];

function prompt(text: string): number[] {
  return served.tokenizer.encode(`<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`, { addSpecialTokens: false });
}

async function constrained(
  fields: StructuredRequestFields,
  jumpForward: boolean,
  over: { temperature?: number; seed?: number } = {},
): Promise<{ out: Outcome; steps: number }> {
  const compiled = await prepareStructuredOutput(fields, {
    tokenizer: served.tokenizer,
    vocabSize: served.config.vocabSize,
    eosTokenIds: served.eosTokenIds,
  });
  model().scheduler.jumpForward = jumpForward;
  const before = model().scheduler.stats.decodeSteps;
  const req = request(MODEL, prompt('What is 3 + 4? Answer as JSON.'), {
    maxTokens: 48,
    constraints: choiceConstraints(compiled, 1, { tokenizer: served.tokenizer, reasoning: false }),
    ...over,
  });
  req.sampling = req.sampling.map((p) => ({ ...p, topLogprobs: 3, eosTokenIds: served.eosTokenIds }));
  const out = await collect(engine.generate(req), 1);
  return { out, steps: model().scheduler.stats.decodeSteps - before };
}

describe('jump-forward decoding', () => {
  it('an aborted constrained request frees its matcher, rows and blocks', async () => {
    model().scheduler.jumpForward = true;
    const rows = model().blocks.rowsAvailable;
    const compiled = await prepareStructuredOutput(cases[3][1], {
      tokenizer: served.tokenizer,
      vocabSize: served.config.vocabSize,
      eosTokenIds: served.eosTokenIds,
    });
    const [inner] = choiceConstraints(compiled, 1, { tokenizer: served.tokenizer, reasoning: false });
    let disposed = 0;
    const counted: TokenConstraint = {
      fillNextTokenBitmask: (m) => inner!.fillNextTokenBitmask(m),
      acceptToken: (t) => inner!.acceptToken(t),
      isTerminated: () => inner!.isTerminated(),
      forcedTokens: () => inner!.forcedTokens!(),
      rollback: (n) => inner!.rollback!(n),
      dispose: () => {
        disposed++;
        inner!.dispose();
      },
    };
    const abort = new AbortController();
    const out = await collect(
      engine.generate(
        request(MODEL, prompt('Sum?'), { maxTokens: 48, temperature: 1, seed: 5, constraints: [counted], signal: abort.signal }),
      ),
      1,
      (_ev, o) => {
        if (o.tokens[0].length >= 3) abort.abort();
      },
    );
    expect(out.finish[0]?.reason).toBe('abort');
    await new Promise((r) => setTimeout(r, 50));
    expect(disposed).toBe(1);
    expect(model().blocks.rowsAvailable).toBe(rows);
    expect(blocksInUse()).toBe(0);
  }, 600_000);

  for (const [name, fields] of cases) {
    it(`greedy: the tokens and logprobs of token-by-token decoding, in fewer steps (${name})`, async () => {
      const plain = await constrained(fields, false);
      const jump = await constrained(fields, true);
      const text = served.tokenizer.decode(plain.out.tokens[0]);
      expect(jump.out.tokens[0], text).toEqual(plain.out.tokens[0]);
      expect(jump.out.finish[0]).toEqual(plain.out.finish[0]);
      plain.out.sampled[0].forEach((p, i) => {
        const j = jump.out.sampled[0][i];
        expect(Math.abs(j.logprob - p.logprob), `${text}: token ${i}`).toBeLessThanOrEqual(1e-4 + 1e-4 * Math.abs(p.logprob));
        expect(j.topLogprobs.map((t) => t.id)).toEqual(p.topLogprobs.map((t) => t.id));
        j.topLogprobs.forEach((t, k) =>
          expect(Math.abs(t.logprob - p.topLogprobs[k].logprob)).toBeLessThanOrEqual(1e-4 + 1e-4 * Math.abs(t.logprob)),
        );
      });
      // Every JSON document here has forced keys or punctuation: fewer steps than output tokens.
      expect(plain.steps).toBe(plain.out.tokens[0].length - 1);
      expect(jump.steps).toBeLessThan(plain.steps);
    }, 600_000);
  }

  it('seeded sampling: the same tokens as token-by-token decoding', async () => {
    const plain = await constrained(cases[0][1], false, { temperature: 1, seed: 1 });
    const jump = await constrained(cases[0][1], true, { temperature: 1, seed: 1 });
    expect(jump.out.tokens[0], served.tokenizer.decode(plain.out.tokens[0])).toEqual(plain.out.tokens[0]);
  }, 600_000);
});
