// The loopback bridge (issue 24) for real: the built app in headless Chromium, `npm run bridge`'s
// program as a child process, pairing through the Bridge view, then clients outside the browser
// (the `openai` npm package in Node, and plain fetch) against http://127.0.0.1:<port>/v1: chat,
// streaming and tool calls answer as they do inside the page; a 20 MB artifact upload arrives
// whole; an RL job runs with ART's event order and leaves its checkpoint; a client that aborts a
// stream frees the engine's batch rows; a foreign Origin gets 403; a wrong pairing code pairs
// nothing; a tab closed mid-stream ends the stream with an error and later requests get 503, until a
// new tab of the app reconnects by itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK as ASKED, MODEL, complete } from './chat-helpers';
import { loadOpenAI, openApp, startHearth, type Hearth } from './harness';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ASK = ASKED as OpenAI.ChatCompletionMessageParam[];

let h: Hearth;
let bridge: ChildProcess;
/** The pairing link the bridge printed. */
let link: URL;
/** http://127.0.0.1:<port>/v1 */
let base: string;
let client: OpenAI;

/** Starts the bridge as `npm run bridge` does, on a free port, and reads its pairing link. */
async function startBridge(app: string): Promise<{ child: ChildProcess; link: URL }> {
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, ['bridge/src/cli.ts', '--port', '0', '--app', app], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    if (line.startsWith(`${app}/#/bridge?`)) return { child, link: new URL(line) };
    console.log(line);
  }
  throw new Error('the bridge exited without printing a pairing link');
}

/** The Settings panel's bridge state in `page` once it reads `state`. */
async function bridgeState(page: Page, state: string): Promise<void> {
  await page.goto(`${h.server.url}/#/settings`);
  await page.locator(`hearth-bridge-panel [data-field="bridge-state"][data-state="${state}"]`).waitFor({ timeout: 60_000 });
}

const json = (body: unknown) => ({
  headers: { Authorization: `Bearer ${h.key}`, 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  ({ child: bridge, link } = await startBridge(h.server.url));
  base = `http://127.0.0.1:${link.hash.match(/port=(\d+)/)![1]}/v1`;
  client = new OpenAI({ baseURL: base, apiKey: h.key, maxRetries: 0, timeout: 600_000 });
});
afterAll(async () => {
  bridge?.kill();
  await h?.close();
});

describe('pairing', () => {
  it('a wrong code pairs nothing; the printed link pairs the tab', async () => {
    const code = new URLSearchParams(link.hash.split('?')[1]).get('code')!;
    expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    const view = h.page.locator('hearth-bridge');
    await h.page.goto(`${h.server.url}/#/bridge?port=${new URL(base).port}&code=${code === 'AAAA-AAAA' ? 'BBBB-BBBB' : 'AAAA-AAAA'}`);
    await view.getByRole('button', { name: 'Connect' }).click();
    await expect.poll(() => view.locator('[data-field="bridge-error"]').textContent()).toContain('pairing code is wrong');
    const unpaired = await fetch(`${base}/models`, { headers: { Authorization: `Bearer ${h.key}` } });
    expect(unpaired.status).toBe(503);
    expect((await unpaired.json()).error.message).toContain('open the Hearth app');

    await h.page.goto(link.href);
    await view.getByRole('button', { name: 'Connect' }).click();
    await bridgeState(h.page, 'connected');
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain(MODEL);
  });
});

describe('clients outside the browser', () => {
  it('chat, streaming and a tool call answer as they do inside the page', async () => {
    const body = { model: MODEL, messages: ASK, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2 };
    const inPage = await complete(h.page, h.key, body);
    expect(inPage.ok).toBe(true);
    const outside = await client.chat.completions.create(body);
    const page = (inPage as { completion: OpenAI.ChatCompletion }).completion;
    expect(outside.choices[0].message.content).toBe(page.choices[0].message.content);
    expect(outside.choices[0].logprobs!.content!.map((t) => t.token)).toEqual(page.choices[0].logprobs!.content!.map((t) => t.token));

    // Streamed chunk by chunk: the deltas add up to the same answer, then a usage chunk.
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(page.choices[0].message.content);
    expect(chunks).toBeGreaterThanOrEqual(4);
    expect(usage?.completion_tokens).toBe(page.usage!.completion_tokens);

    const add = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] };
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'add', description: 'Adds two integers.', parameters: add } },
    ];
    const call = await client.chat.completions.create({
      model: MODEL,
      messages: ASK,
      tools,
      tool_choice: { type: 'function', function: { name: 'add' } },
      temperature: 0,
      max_tokens: 200,
    });
    const fn = call.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(fn.function.name).toBe('add');
    expect(Object.keys(JSON.parse(fn.function.arguments)).sort()).toEqual(['a', 'b']);
  });

  it('a 20 MB artifact upload arrives whole', async () => {
    const model = await (
      await fetch(`${base}/preview/models`, {
        method: 'POST',
        ...json({ entity: null, project: 'bridge', name: 'upload', base_model: MODEL, return_existing: true }),
      })
    ).json();
    const line =
      JSON.stringify({
        messages: [
          { role: 'user', content: 'Ticket 7: status?' },
          { role: 'assistant', content: '42' },
        ],
      }) + '\n';
    const data = line.repeat(Math.ceil(20_000_000 / line.length));
    const form = new FormData();
    form.append('model_id', model.id);
    form.append('file', new Blob([data]), 'train.jsonl');
    const res = await fetch(`${base}/preview/artifacts`, { method: 'POST', headers: { Authorization: `Bearer ${h.key}` }, body: form });
    const artifact = await res.json();
    expect(res.status, JSON.stringify(artifact)).toBe(200);
    expect(artifact.files).toEqual([{ name: 'train.jsonl', bytes: data.length }]);
  });

  it('an RL job runs with its events in ART order and leaves a checkpoint', { timeout: 600_000 }, async () => {
    const model = await (
      await fetch(`${base}/preview/models`, {
        method: 'POST',
        ...json({ entity: null, project: 'bridge', name: 'rl', base_model: MODEL, return_existing: true }),
      })
    ).json();
    const name = `${model.entity}/${model.project}/${model.name}`;
    const rollout = await client.chat.completions.create({
      model: `${name}:step0`,
      messages: ASK,
      n: 4,
      temperature: 1,
      max_tokens: 4,
      seed: 7,
    });
    const groups = [{ trajectories: rollout.choices.map((c, i) => ({ messages_and_choices: [...ASK, c], reward: i % 2 })) }];
    const job = await (
      await fetch(`${base}/preview/training-jobs`, {
        method: 'POST',
        ...json({ model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-3 } }),
      })
    ).json();
    expect(job.id).toBeTruthy();
    // ART's polling loop: `after` advances past every event but training_started.
    const types: string[] = [];
    let after = '';
    let started = -1;
    for (let i = 0; i < 1200 && types.at(-1) !== 'training_ended'; i++) {
      const page = await (
        await fetch(`${base}/preview/training-jobs/${job.id}/events${after ? `?after=${after}` : ''}`, {
          headers: { Authorization: `Bearer ${h.key}` },
        })
      ).json();
      for (const e of page.data) {
        if (e.type === 'training_failed') throw new Error(e.data.error_message);
        if (e.type === 'training_started') {
          if (started < 0) types.push(e.type);
          started = e.data.num_sequences;
          continue;
        }
        types.push(e.type);
        after = e.id;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(started).toBeGreaterThan(0);
    expect(types).toEqual(['training_started', ...Array(started).fill('gradient_step'), 'training_ended']);
    const latest = await (
      await fetch(`${base}/preview/models/${model.id}/checkpoints?limit=1&order=desc`, { headers: { Authorization: `Bearer ${h.key}` } })
    ).json();
    expect(latest.data[0].step).toBe(1);
    const served = await client.chat.completions.create({ model: name, messages: ASK, max_tokens: 2 });
    expect(served.model).toContain(model.name);
  });

  it('a client that aborts a stream frees the engine rows for the next request', async () => {
    const controller = new AbortController();
    // Every batch row the engine has, for 1500 tokens each: unless the abort reaches the engine,
    // the request after it waits for ~96k decode rows, far past the test's timeout.
    const hog = await client.chat.completions.create(
      {
        model: MODEL,
        messages: ASK,
        n: 64,
        temperature: 1,
        max_tokens: 1500,
        ignore_eos: true,
        stream: true,
      } as OpenAI.ChatCompletionCreateParamsStreaming,
      { signal: controller.signal },
    );
    let chunks = 0;
    for await (const chunk of hog) if (chunk.choices.length && ++chunks === 3) controller.abort();
    expect(chunks).toBeGreaterThanOrEqual(3);
    const next = await client.chat.completions.create({
      model: MODEL,
      messages: ASK,
      max_tokens: 3,
      temperature: 0,
      ignore_eos: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(next.usage!.completion_tokens).toBe(3);
    await bridgeState(h.page, 'connected');
    await expect.poll(() => h.page.locator('hearth-bridge-panel [data-field="bridge-in-flight"]').textContent()).toBe('0');
  });

  it('refuses a request from a foreign Origin with 403', async () => {
    const status = (origin: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${base}/models`, { headers: { Origin: origin, Authorization: `Bearer ${h.key}` } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status('https://example.com')).toBe(403);
    expect(await status(h.server.url)).toBe(200);
  });
});

describe('when the tab goes away', () => {
  it('a stream ends with an error, later requests get 503, and a new tab reconnects by itself', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: ASK,
      max_tokens: 1500,
      temperature: 1,
      ignore_eos: true,
      stream: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    let chunks = 0;
    const read = (async () => {
      for await (const chunk of stream) if (chunk.choices.length && ++chunks === 2) await h.page.close();
    })();
    await expect(read).rejects.toThrow(/closed or reloaded/);
    const gone = await fetch(`${base}/models`, { headers: { Authorization: `Bearer ${h.key}` } });
    expect(gone.status).toBe(503);
    expect((await gone.json()).error.message).toContain('open the Hearth app');

    // No code this time: the app's stored credential pairs the new tab.
    h.page = await openApp(h.context, h.server);
    await bridgeState(h.page, 'connected');
    expect((await client.models.list()).data.map((m) => m.id)).toContain(MODEL);
  });
});
