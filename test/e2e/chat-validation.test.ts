// Chat completions' contract before any token is generated, through the real Service Worker,
// engine worker and IndexedDB, with the official `openai` SDK in the page: validation errors as
// vLLM answers them (400 BadRequestError with vLLM's messages, pydantic error types, also for
// stream: true, before any stream starts), 404 NotFoundError for unknown models and checkpoints,
// 401 without a key, the model list, and the playground's model picker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
});
afterAll(async () => {
  await h?.close();
});

interface Outcome {
  ok: boolean;
  status?: number;
  name?: string;
  message?: string;
  param?: string | null;
}

/** Runs `client.chat.completions.create(body)` in the page; returns the SDK's error as data. */
async function create(body: Record<string, unknown>, key: string | null = h.key): Promise<Outcome> {
  return h.page.evaluate(
    async ({ body, key }) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({ baseURL: `${location.origin}/v1`, apiKey: key ?? 'none', dangerouslyAllowBrowser: true, maxRetries: 0 });
      try {
        const res = await client.chat.completions.create(body);
        if (body.stream) for await (const _ of res) void _;
        return { ok: true };
      } catch (err: any) {
        return {
          ok: false,
          status: err.status,
          name: err.constructor.name,
          message: err.error?.message ?? err.message,
          param: err.error?.param,
        };
      }
    },
    { body, key },
  );
}

const messages = [{ role: 'user', content: 'Hello' }];

describe('validation through the Service Worker, as vLLM answers', () => {
  it('refuses cross-field rules with 400 and vLLM messages, streaming or not', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ stream_options: { include_usage: true } }, 'Stream options can only be defined when `stream=True`.'],
      [{ top_logprobs: 3 }, 'when using `top_logprobs`, `logprobs` must be set to true.'],
      [{ stream: true, prompt_logprobs: 2 }, '`prompt_logprobs` are not available when `stream=True`.'],
      [
        { continue_final_message: true, add_generation_prompt: true },
        'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
      ],
      [{ n: 0, stream: true }, 'n must be at least 1, got 0.'],
      [{ priority: 1 }, 'Got priority 1 but Priority scheduling is not enabled.'],
      [{ cache_salt: '' }, "Parameter 'cache_salt' must be a non-empty string if provided."],
      [{ tool_choice: 'auto' }, 'When using `tool_choice`, `tools` must be set.'],
    ];
    for (const [extra, message] of cases) {
      const out = await create({ model: 'hearth/tiny-chat', messages, ...extra });
      expect(out, JSON.stringify(extra)).toMatchObject({ ok: false, status: 400, name: 'BadRequestError', message });
    }
  });

  it('names pydantic error types for wrong types and out-of-range seeds', async () => {
    const seed = await create({ model: 'hearth/tiny-chat', messages, seed: 9223372036854775808n.toString() });
    expect(seed).toMatchObject({ status: 400, name: 'BadRequestError' });
    expect(seed.message).toContain('less_than_equal');
    const raw = await api(h.page, 'POST', '/v1/chat/completions', {
      key: h.key,
      rawBody: '{"messages": [{"role": "user", "content": "x"}], "seed": -9223372036854775809}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(raw.status).toBe(400);
    expect(raw.json.error).toMatchObject({ type: 'Bad Request', code: 400, param: 'seed' });
    expect(raw.json.error.message).toContain('greater_than_equal');
    const n = await create({ model: 'hearth/tiny-chat', messages, n: 1.5 });
    expect(n.message).toContain("'type': 'int_from_float'");
    const wrongType = await api(h.page, 'POST', '/v1/chat/completions', {
      key: h.key,
      rawBody: 'x',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(wrongType.status).toBe(415);
  });

  it('answers 404 for unknown models and checkpoints, 401 without a valid key', async () => {
    expect(await create({ model: 'someone/some-project/missing', messages })).toMatchObject({
      status: 404,
      name: 'NotFoundError',
      message: 'The model `someone/some-project/missing` does not exist.',
    });
    const reg = await api(h.page, 'POST', '/v1/preview/models', {
      key: h.key,
      body: { entity: null, project: 'e2e', name: 'agent', base_model: 'hearth/tiny-chat', return_existing: true },
    });
    expect(reg.status).toBe(200);
    const missingStep = await create({ model: 'wandb-artifact:///local/e2e/agent:step7', messages });
    expect(missingStep).toMatchObject({ status: 404, name: 'NotFoundError' });
    expect(missingStep.message).toMatch(/has no checkpoint at step 7/);
    expect(await create({ messages }, 'hth_not-a-key')).toMatchObject({ status: 401, name: 'AuthenticationError' });
  });
});

describe('models', () => {
  it('lists base models and checkpoints through the SDK', async () => {
    const ids = await h.page.evaluate(async (key) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({ baseURL: `${location.origin}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
      const out: { id: string; max_model_len: number | null }[] = [];
      for await (const m of client.models.list()) out.push({ id: m.id, max_model_len: m.max_model_len });
      return out;
    }, h.key);
    expect(ids).toContainEqual({ id: 'hearth/tiny-chat', max_model_len: 2048 });
    expect(ids.map((m) => m.id)).toContain('wandb-artifact:///local/e2e/agent:step0');
  });

  it('offers them in the chat playground', async () => {
    await h.page.getByRole('link', { name: 'Chat' }).click();
    const picker = h.page.locator('hearth-chat-playground select[aria-label="Model"]');
    await picker.locator('option[value="wandb-artifact:///local/e2e/agent:step0"]').waitFor({ state: 'attached' });
    const options = await picker.locator('option').allInnerTexts();
    expect(options[0]).toBe('Default model');
    expect(options).toContain('hearth/tiny-qwen3 (40960 ctx)');
    await h.page.screenshot({ path: 'test-results/ui-chat-empty.png' });
  });
});
