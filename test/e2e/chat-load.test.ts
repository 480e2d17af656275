// Chat completions under load and cancellation, through the real Service Worker and engine worker
// with the official `openai` SDK in several tabs: an aborted stream, and a non-streaming request
// whose tab closed, give their batch slots back at once, so the next request is served instead of
// waiting behind 64 choices of 1500 tokens; 54 concurrent requests from three tabs, streamed and not, all complete with
// the answers each gets alone, while a 400, a 404 and an aborted stream among them fail alone.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLANK_PATH, loadOpenAI, startHearth, type Hearth } from './harness';
import { ASK, MODEL, ok } from './chat-helpers';

let h: Hearth;
let tabs: Page[];
beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  // Two more tabs of the origin that are not the app: controlled by the Service Worker, they
  // only call /v1 (the first tab hosts the engine).
  tabs = [h.page];
  for (let i = 0; i < 2; i++) {
    const tab = await h.context.newPage();
    await tab.goto(h.server.url + BLANK_PATH);
    await tab.waitForFunction(() => navigator.serviceWorker.controller !== null);
    await loadOpenAI(tab);
    tabs.push(tab);
  }
});
afterAll(async () => {
  await h?.close();
});

/** 64 choices (every batch row the engine has) of 1500 tokens each. */
const HOG = { model: MODEL, messages: ASK, n: 64, temperature: 1, max_tokens: 1500, ignore_eos: true };

/** A short greedy completion: it is only served once the hog's rows are free. */
async function next(page: Page, key: string) {
  return ok(page, key, { model: MODEL, messages: ASK, max_tokens: 3, temperature: 0, ignore_eos: true });
}

// Unless an abort reaches the engine, the request after it waits for ~96k decode rows, far past
// the test's timeout.
describe('aborted requests free their batch slots', () => {
  it('a stream the client stops reading', async () => {
    const read = await h.page.evaluate(
      async ({ key, hog }) => {
        const OpenAI = (globalThis as any).OpenAI;
        const client = new OpenAI({ baseURL: `${location.origin}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
        const controller = new AbortController();
        const s = await client.chat.completions.create({ ...hog, stream: true }, { signal: controller.signal });
        let chunks = 0;
        // The SDK ends the iteration quietly once its signal aborts (after the chunks it had).
        for await (const chunk of s) if (chunk.choices.length && ++chunks === 3) controller.abort();
        return chunks;
      },
      { key: h.key, hog: HOG },
    );
    expect(read).toBeGreaterThanOrEqual(3);
    const after = await next(h.page, h.key);
    expect(after.choices[0].finish_reason).toBe('length');
    expect(after.usage.completion_tokens).toBe(3);
  }, 120_000);

  it('a non-streaming request whose tab closes (the Service Worker aborts it in the engine)', async () => {
    const tab = await h.context.newPage();
    await tab.goto(h.server.url + BLANK_PATH);
    await tab.waitForFunction(() => navigator.serviceWorker.controller !== null);
    await tab.evaluate(
      ({ key, hog }) => {
        void fetch('/v1/chat/completions', {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(hog),
        });
      },
      { key: h.key, hog: HOG },
    );
    // Long enough for the request to reach the engine and start decoding on SwiftShader.
    await new Promise((r) => setTimeout(r, 3000));
    await tab.close();
    const after = await next(h.page, h.key);
    expect(after.choices[0].finish_reason).toBe('length');
    expect(after.usage.completion_tokens).toBe(3);
  }, 120_000);
});

describe('concurrency', () => {
  it('54 requests from three tabs all complete as they would alone; failing ones fail alone', async () => {
    const prompts = ['What is 1 + 2?', 'What is 5 + 4?', 'What is 8 + 0?'];
    const body = (p: string) => ({
      model: MODEL,
      messages: [{ role: 'user', content: p }],
      max_tokens: 4,
      temperature: 0,
      ignore_eos: true,
    });
    const alone: string[] = [];
    for (const p of prompts) alone.push((await ok(h.page, h.key, body(p))).choices[0].message.content);

    const perTab = await Promise.all(
      tabs.map((tab, t) =>
        tab.evaluate(
          async ({ key, bodies, t, model }) => {
            const OpenAI = (globalThis as any).OpenAI;
            const client = new OpenAI({
              baseURL: `${location.origin}/v1`,
              apiKey: key,
              dangerouslyAllowBrowser: true,
              maxRetries: 0,
              timeout: 600_000,
            });
            const one = async (body: any, i: number) => {
              if (i % 2 === 0) {
                const c = await client.chat.completions.create(body);
                return { text: c.choices[0].message.content, finish: c.choices[0].finish_reason, tokens: c.usage.completion_tokens };
              }
              const s = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
              let text = '';
              let finish = null;
              let tokens = -1;
              for await (const chunk of s) {
                for (const c of chunk.choices) {
                  text += c.delta?.content ?? '';
                  finish = c.finish_reason ?? finish;
                }
                if (chunk.usage) tokens = chunk.usage.completion_tokens;
              }
              return { text, finish, tokens };
            };
            // The failures beside them: each tab sends one of them.
            const failing = async () => {
              try {
                if (t === 0) await client.chat.completions.create({ ...bodies[0], top_logprobs: 2 });
                else if (t === 1) await client.chat.completions.create({ ...bodies[0], model: `${model}-missing` });
                else {
                  const controller = new AbortController();
                  const s = await client.chat.completions.create(
                    { ...bodies[0], max_tokens: 400, stream: true },
                    { signal: controller.signal },
                  );
                  for await (const chunk of s) if (chunk.choices.length) controller.abort();
                  return controller.signal.aborted ? 'aborted' : 'finished';
                }
                return 'succeeded';
              } catch (err: any) {
                return `${err.constructor.name}${err.status ? ` ${err.status}` : ''}`;
              }
            };
            const [fail, ...results] = await Promise.all([failing(), ...bodies.map(one)]);
            return { fail, results };
          },
          { key: h.key, bodies: Array.from({ length: 18 }, (_, i) => body(prompts[(i + t) % 3])), t, model: MODEL },
        ),
      ),
    );
    expect(perTab.map((r) => r.fail)).toEqual(['BadRequestError 400', 'NotFoundError 404', 'aborted']);
    perTab.forEach((r, t) => {
      expect(r.results).toHaveLength(18);
      r.results.forEach((res, i) => {
        expect(res, `tab ${t} request ${i}`).toEqual({ text: alone[(i + t) % 3], finish: 'length', tokens: 4 });
      });
    });
  }, 300_000);
});
