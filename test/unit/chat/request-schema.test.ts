// The chat request schema: pydantic's lax coercion ("true" -> true, "5" -> 5, 5.0 -> 5, 5.5
// refused), null as "not given" for Optional fields, unknown fields kept and ignored, the exact
// 64-bit seed; and through the real app (no GPU): vLLM's 400 envelope for schema errors, 415 and
// malformed JSON, the request rules before the model is looked up, 404 for unknown models and 503
// when nothing can generate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topLevelNumberText, withExactSeed } from '../../../src/api/schemas/chat-json';
import { ChatCompletionRequest } from '../../../src/api/schemas/chat-request';
import { startEngine, type TestEngine } from '../api/engine-fixture';

const messages = [{ role: 'user', content: 'hi' }];
const parse = (extra: Record<string, unknown>) => ChatCompletionRequest.safeParse({ messages, ...extra });

describe('lax coercion', () => {
  it('coerces booleans, integers and numbers as pydantic lax mode does', () => {
    const r = parse({
      logprobs: 'true',
      stream: 'off',
      echo: 1,
      ignore_eos: 'YES',
      n: '5',
      top_logprobs: 3.0,
      max_tokens: ' 7 ',
      temperature: '0.5',
      top_p: 1,
      min_tokens: true,
    });
    expect(r.success).toBe(true);
    expect(r.data).toMatchObject({
      logprobs: true,
      stream: false,
      echo: true,
      ignore_eos: true,
      n: 5,
      top_logprobs: 3,
      max_tokens: 7,
      temperature: 0.5,
      top_p: 1,
      min_tokens: 1,
    });
  });

  it('refuses what lax mode refuses, with pydantic error types', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ n: 5.5 }, 'int_from_float'],
      [{ n: 'five' }, 'int_parsing'],
      [{ n: [1] }, 'int_type'],
      [{ logprobs: 'maybe' }, 'bool_parsing'],
      [{ logprobs: 2 }, 'bool_parsing'],
      [{ echo: null }, 'bool_type'],
      [{ temperature: 'hot' }, 'float_parsing'],
      [{ temperature: {} }, 'float_type'],
      [{ model: 5 }, 'string_type'],
      [{ truncate_prompt_tokens: -2 }, 'greater_than_equal'],
      [{ seed: 2n ** 63n }, 'less_than_equal'],
      [{ seed: -(2n ** 63n) - 1n }, 'greater_than_equal'],
    ];
    for (const [extra, type] of cases) {
      const r = parse(extra);
      expect(
        r.success,
        JSON.stringify(extra, (_, v) => (typeof v === 'bigint' ? v.toString() : v)),
      ).toBe(false);
      expect((r.error!.issues[0] as { params?: { type?: string } }).params?.type).toBe(type);
    }
  });

  it('reads null as not given where vLLM has Optional, keeps unknown fields, maps vllm_xargs', () => {
    const r = parse({ temperature: null, max_tokens: null, stop: null, tools: null, custom_field: { a: 1 }, vllm_xargs: { k: 'v' } });
    expect(r.success).toBe(true);
    expect(r.data!.temperature).toBeUndefined();
    expect(r.data!.max_tokens).toBeUndefined();
    expect(r.data!.stop).toBeUndefined();
    expect((r.data as Record<string, unknown>).custom_field).toEqual({ a: 1 });
    expect(r.data!.engine_xargs).toEqual({ k: 'v' });
  });

  it('accepts any role and content as text or parts; refuses a message without a role', () => {
    expect(parse({ messages: [{ role: 'narrator', content: [{ type: 'text', text: 'x' }], extra: 1 }] }).success).toBe(true);
    expect(parse({ messages: [{ content: 'x' }] }).success).toBe(false);
    expect(ChatCompletionRequest.safeParse({}).success).toBe(false);
  });

  it('keeps a 64-bit seed exact through the raw body', () => {
    const text = `{"messages": [{"role": "user", "content": "{\\"seed\\": 1}"}], "nested": {"seed": 5}, "seed": 9223372036854775807}`;
    expect(topLevelNumberText(text, 'seed')).toBe('9223372036854775807');
    const body = withExactSeed(JSON.parse(text), text) as { seed: bigint };
    expect(body.seed).toBe(9223372036854775807n);
    const r = ChatCompletionRequest.safeParse(body);
    expect(r.data!.seed).toBe(9223372036854775807n);
    // Above 2^53 a JS number would be off by hundreds.
    const big = '{"seed": 9007199254740993, "messages": []}';
    expect((withExactSeed(JSON.parse(big), big) as { seed: bigint }).seed).toBe(9007199254740993n);
    expect(topLevelNumberText('{"seed": "12"}', 'seed')).toBeUndefined();
    expect(topLevelNumberText('{"a": [1, {"seed": 3}], "seed": -4}', 'seed')).toBe('-4');
  });
});

describe('POST /v1/chat/completions before generation (no GPU)', () => {
  let e: TestEngine;
  beforeAll(async () => {
    e = await startEngine();
  });
  afterAll(() => e.close());
  const chat = (body: unknown, opts: { rawBody?: string; headers?: Record<string, string> } = {}) =>
    e.call('POST', '/v1/chat/completions', body === undefined ? opts : { body, ...opts });

  it('answers schema errors with vLLM 400 "Bad Request" naming the pydantic error', async () => {
    const res = await chat({ messages, n: 'two', seed: 1.5 });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'Bad Request', code: 400, param: 'n' });
    expect(res.json.error.message).toMatch(/^2 validation errors:\n/);
    expect(res.json.error.message).toContain("'type': 'int_parsing', 'loc': ('body', 'n')");
    expect(res.json.error.message).toContain("'type': 'int_from_float', 'loc': ('body', 'seed')");

    const missing = await chat({ model: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toContain("'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'");

    const long = await chat({ messages, seed: '9223372036854775808' });
    expect(long.json.error.message).toContain("'type': 'less_than_equal'");
    const raw = await chat(undefined, {
      rawBody: `{"messages": [], "seed": 9223372036854775808}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(raw.json.error.message).toContain("'type': 'less_than_equal'");
  });

  it('refuses an over-long list from its length and reports at most 20 bad items, never a stack overflow (issue 26)', async () => {
    const huge = await chat({ messages, allowed_token_ids: Array(300_001).fill(1) });
    expect(huge.status).toBe(400);
    expect(huge.json.error.param).toBe('allowed_token_ids');
    expect(huge.json.error.message).toMatch(
      /^1 validation error:\n {2}\{'type': 'too_long', 'loc': \('body', 'allowed_token_ids'\), 'msg': 'List should have at most 300000 items', 'input': \[1, 1, .*'\.\.\.'\], 'ctx': \{'max_length': 300000\}\}/,
    );
    expect(huge.json.error.message.length).toBeLessThan(1000);

    // 100,000 bad ids, within the cap: the first 20 are reported.
    const bad = await chat({ messages, stop_token_ids: Array(100_000).fill('x') });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/^20 validation errors:\n/);
    expect(bad.json.error.message).toContain("'loc': ('body', 'stop_token_ids', 19)");

    const bias = await chat({ messages, logit_bias: Object.fromEntries(Array.from({ length: 300_001 }, (_, i) => [String(i), 1])) });
    expect(bias.json.error.message).toContain(
      "'type': 'too_long', 'loc': ('body', 'logit_bias'), 'msg': 'Dictionary should have at most 300000 items'",
    );

    const word = await chat({ messages, bad_words: ['x'.repeat(1025)] });
    expect(word.json.error.message).toContain(
      "'type': 'string_too_long', 'loc': ('body', 'bad_words', 0), 'msg': 'String should have at most 1024 characters'",
    );

    const parts = await chat({ messages: [{ role: 'user', content: Array(1025).fill({ type: 'text', text: 'x' }) }] });
    expect(parts.status).toBe(400);
    expect(parts.json.error.message).toContain("'loc': ('body', 'messages', 0, 'content')");
  }, 30_000);

  it('refuses a non-admin chat whose n alone is over the 32 batch rows a key may hold, naming the limit (issue 26)', async () => {
    const key = (await e.call('POST', '/v1/preview/api-keys', { body: { name: 'rows' } })).json.key;
    const over = await e.call('POST', '/v1/chat/completions', { key, body: { messages, n: 64, ignore_eos: true } });
    expect(over.status).toBe(400);
    expect(over.json.error).toMatchObject({ param: 'n', type: 'BadRequestError' });
    expect(over.json.error.message).toMatch(/n is 64, but one API key may hold at most 32 batch rows/);
    // Within the cap the request goes on to the model (here: nothing can generate), and the admin key has no row cap.
    expect((await e.call('POST', '/v1/chat/completions', { key, body: { messages, n: 32 } })).status).toBe(503);
    expect((await chat({ messages, n: 64 })).status).toBe(503);
  });

  it('refuses non-JSON bodies: 415 for another content type, 400 for malformed JSON or a non-object', async () => {
    const wrongType = await chat(undefined, { rawBody: 'hello', headers: { 'Content-Type': 'text/plain' } });
    expect(wrongType.status).toBe(415);
    expect(wrongType.json.error.message).toBe("Unsupported Media Type: Only 'application/json' is allowed");
    const malformed = await chat(undefined, { rawBody: '{"messages": [', headers: { 'Content-Type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.message).toContain("'type': 'json_invalid'");
    const array = await chat([1, 2]);
    expect(array.status).toBe(400);
    expect(array.json.error.type).toBe('Bad Request');
  });

  it('checks request rules (with coerced values) before the model and the engine', async () => {
    const res = await chat({ messages, stream: 'false', stream_options: { include_usage: true } });
    expect(res.status).toBe(400);
    expect(res.json.error).toEqual({
      message: 'Stream options can only be defined when `stream=True`.',
      type: 'BadRequestError',
      param: 'stream_options',
      code: 400,
    });
    const n = await chat({ messages, model: 'no/such/model', n: '0' });
    expect(n.json.error.message).toBe('n must be at least 1, got 0.');
  });

  it('answers 404 for an unknown model, then 503 when nothing can generate', async () => {
    const unknown = await chat({ messages, model: 'nobody/nothing' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toEqual({
      message: 'The model `nobody/nothing` does not exist.',
      type: 'NotFoundError',
      param: null,
      code: 404,
    });
    const accepted = await chat({ messages, model: 'hearth/tiny-chat', logprobs: 'true', top_logprobs: '2', unknown_field: 1 });
    expect(accepted.status).toBe(503);
    expect(accepted.json.error.type).toBe('ServiceUnavailableError');
  });
});
