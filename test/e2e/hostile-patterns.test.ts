// Hostile input, second round (issue 26, part A), through the real Service Worker, engine worker
// and IndexedDB: patterns whose bounded quantifiers backtrack as badly as unbounded ones (an
// adapter's target_modules, a tokenizer.json Split), a JSON schema whose grammar compile costs
// minutes in total though each of its strings is within limits, and chat templates that build a
// huge value in one step (tojson over shared references) or whose compile alone is slow (a long
// run of whitespace). Each is refused with its family's 4xx naming the limit, while a second
// principal's chat, sent a second later, completes beside it. The times are logged, not asserted.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK, complete, MODEL } from './chat-helpers';
import { loadOpenAI, startHearth, type Hearth } from './harness';
import { beside as besideOf, bystanderKey, importAdapter, refused, TINY_CHAT_DIR, uploadModelWith } from './hostile-helpers';

let h: Hearth;
let bystander: string;

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  bystander = await bystanderKey(h);
  // The model loads on its first chat (a minute on SwiftShader): the bystander's chat runs once
  // before, so that its times beside each row are those of a chat, not of a model load.
  const warm = await complete(h.page, bystander, { model: MODEL, messages: ASK, max_tokens: 2, temperature: 0 });
  expect(warm.ok, JSON.stringify(warm)).toBe(true);
});
afterAll(async () => {
  await h?.close();
});

/** The hostile request, and a second later the bystander's chat (as the issue's measurements were made). */
const beside = <T>(label: string, hostile: () => Promise<T>) => besideOf(h, bystander, hostile, label, 1000);

/** `.{0,999}` twelve times, then `x`: 97 characters, no unbounded quantifier, degree-12 backtracking. */
const BOUNDED_BOMB = '.{0,999}'.repeat(12) + 'x';

describe('patterns with bounded quantifiers', () => {
  it('an adapter whose target_modules is .{0,999} x12 then x is a 422 naming the field and the limit', async () => {
    const config = JSON.stringify({ peft_type: 'LORA', r: 8, lora_alpha: 16, target_modules: BOUNDED_BOMB, bias: 'none' });
    const res = await beside('target_modules .{0,999}x12 x', () =>
      importAdapter(h, 'bounded-bomb', {
        'adapter_config.json': new TextEncoder().encode(config),
        'adapter_model.safetensors': new Uint8Array(8),
      }),
    );
    expect(res.status, JSON.stringify(res.json)).toBe(422);
    expect(JSON.stringify(res.json.detail)).toMatch(
      /adapter_config\.json: target_modules pattern is refused \(more than 2 unbounded or long/,
    );
  });

  it('a tokenizer.json Split with that pattern is a 422 naming the file and field, and the model is not added', async () => {
    const tokenizer = JSON.parse(readFileSync(TINY_CHAT_DIR + 'tokenizer.json', 'utf8'));
    tokenizer.pre_tokenizer.pretokenizers.unshift({ type: 'Split', pattern: { Regex: BOUNDED_BOMB }, behavior: 'Isolated', invert: false });
    const added = await beside('tokenizer.json Split .{0,999}x12 x', () =>
      uploadModelWith(h, { 'tokenizer.json': JSON.stringify(tokenizer) }, 'local/bounded-bomb'),
    );
    expect(added.status, JSON.stringify(added.json)).toBe(422);
    expect(JSON.stringify(added.json.detail)).toMatch(
      /tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex is refused: more than 2 unbounded or long/,
    );
  });
});

describe('work that would stall the engine', () => {
  it('a JSON schema of 24 strings of maxLength 10,000 is a 400 naming the grammar limit', async () => {
    const properties = Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`s${i}`, { type: 'string', maxLength: 10_000 }]));
    const schema = { type: 'object', properties, required: Object.keys(properties) };
    const outcome = refused(
      await beside('response_format 24 x maxLength 10000', () =>
        complete(h.page, h.key, {
          model: MODEL,
          messages: ASK,
          max_tokens: 2,
          response_format: { type: 'json_schema', json_schema: { name: 'wide', schema } },
        }),
      ),
    );
    expect(outcome).toMatchObject({ status: 400, param: 'response_format' });
    expect(outcome.message).toMatch(/over Hearth's limit of \d+ for one grammar/);
  });

  it('a chat_template printing 51 M items of shared references with tojson is a 400 before building them', async () => {
    const chat_template =
      '{% set r = range(100000) %}{% set a = [r, r, r, r, r, r, r, r] %}{% set b = [a, a, a, a, a, a, a, a] %}' +
      '{% set d = [b, b, b, b, b, b, b, b] %}{{ d | tojson }}';
    const outcome = refused(
      await beside('chat_template tojson of 8x8x8 x range(100000)', () =>
        complete(h.page, h.key, { model: MODEL, messages: ASK, max_tokens: 2, chat_template }),
      ),
    );
    expect(outcome).toMatchObject({ status: 400, param: 'chat_template' });
    expect(outcome.message).toMatch(
      /chat template exceeds its budget: the template's tojson would build a string of more than \d+ characters/,
    );
  });

  it('a chat_template of 250,000 spaces is a 400 naming the whitespace limit, before the library compiles it', async () => {
    const outcome = refused(
      await beside('chat_template of 250,000 spaces', () =>
        complete(h.page, h.key, { model: MODEL, messages: ASK, max_tokens: 2, chat_template: ' '.repeat(250_000) }),
      ),
    );
    expect(outcome).toMatchObject({ status: 400, param: 'chat_template' });
    expect(outcome.message).toMatch(/a run of 250000 whitespace characters .* over the limit of \d+/);
  });
});
