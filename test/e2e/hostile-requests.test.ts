// Hostile requests, second round (issue 26, part B), through the real Service Worker, engine
// worker and IndexedDB: a 30 MB user message (10 M CJK characters) and an `allowed_token_ids`
// of 5 M entries are each refused with a 400 naming the limit, while a second principal's chat,
// sent 1 s after the hostile one, completes; one key's chat with n = 64 cannot take the batch.
// The bodies are built inside the page, so only the answers cross to the test. Times are logged
// for the table (never asserted: speed is not a test's business).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK, complete, MODEL } from './chat-helpers';
import type { Page } from 'playwright-core';
import { api, loadOpenAI, openApp, startHearth, type Hearth } from './harness';

let h: Hearth;
/** Another principal's key: the one whose chat must keep working. */
let bystander: string;
/** The key that sends hostile requests. */
let hostile: string;
/** A second app tab, the hostile client's: the engine's tab only hosts the engine and the bystander. */
let client: Page;

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  bystander = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'bystander' } })).json.key;
  hostile = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'hostile' } })).json.key;
  client = await openApp(h.context, h.server);
  // Load the model first, so the times below are the hostile request's, not the first load's.
  expect((await complete(h.page, bystander, { model: MODEL, messages: ASK, max_tokens: 1 })).ok).toBe(true);
  // The bystander's chat alone, for comparison with the times logged below.
  const alone = await chatFrom(h.page, bystander, 'bystander');
  console.log(`[issue 26] bystander alone: ${alone.status} after ${alone.ms} ms`);
});
afterAll(async () => {
  await h?.close();
});

type HostileKind = 'huge-prompt' | 'huge-allowed-token-ids';

interface Answer {
  status: number;
  message: string;
  finish: string | null;
  ms: number;
}

interface Race {
  hostile: Answer;
  bystander: Answer;
}

/** POSTs a chat from `page` (the body built there by `make`, so only the answer crosses to the test); its answer and time. */
function chatFrom(page: Page, key: string, kind: HostileKind | 'bystander') {
  return page.evaluate(
    async ({ key, kind, model }) => {
      const ask = [{ role: 'user', content: 'What is 3 + 4?' }];
      const payload =
        kind === 'huge-prompt'
          ? { model, messages: [{ role: 'user', content: '\u4e2d'.repeat(10_000_000) }], max_tokens: 4 }
          : kind === 'huge-allowed-token-ids'
            ? { model, messages: ask, max_tokens: 4, allowed_token_ids: Array.from({ length: 5_000_000 }, (_, i) => i % 4096) }
            : { model, messages: ask, max_tokens: 4, temperature: 0 };
      const t0 = performance.now();
      const res = await fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(payload),
      });
      const json = await res.json();
      return {
        status: res.status,
        message: String(json?.error?.message ?? ''),
        finish: (json?.choices?.[0]?.finish_reason as string | undefined) ?? null,
        ms: Math.round(performance.now() - t0),
      };
    },
    { key, kind, model: MODEL },
  );
}

/** The hostile request from the client tab, and 1 s later the bystander's chat from the engine's tab; both answers. */
async function race(kind: HostileKind): Promise<Race> {
  const hostileAnswer = chatFrom(client, hostile, kind);
  await new Promise((r) => setTimeout(r, 1000));
  const bystanderAnswer = await chatFrom(h.page, bystander, 'bystander');
  return { hostile: await hostileAnswer, bystander: bystanderAnswer };
}

describe('huge requests are refused from their size, and a bystander is served meanwhile (issue 26)', () => {
  it('a 30 MB user message (10 M CJK characters) is a 400 naming the prompt character limit', async () => {
    const r = await race('huge-prompt');
    console.log(
      `[issue 26] 30 MB message: ${r.hostile.status} after ${r.hostile.ms} ms; bystander ${r.bystander.status} after ${r.bystander.ms} ms`,
    );
    expect(r.hostile.status, r.hostile.message).toBe(400);
    expect(r.hostile.message).toMatch(/prompt has 10000\d{3} characters.*at most \d+ characters/s);
    expect(r.bystander).toMatchObject({ status: 200 });
    expect(r.bystander.finish).toBeTruthy();
  });

  it('allowed_token_ids with 5 M entries is a 400 naming the list limit', async () => {
    const r = await race('huge-allowed-token-ids');
    console.log(
      `[issue 26] 5 M allowed_token_ids: ${r.hostile.status} after ${r.hostile.ms} ms; bystander ${r.bystander.status} after ${r.bystander.ms} ms`,
    );
    expect(r.hostile.status, r.hostile.message).toBe(400);
    expect(r.hostile.message).toMatch(/'too_long', 'loc': \('body', 'allowed_token_ids'\), 'msg': 'List should have at most \d+ items'/);
    // The echoed input is cut, not the 5 M entries back.
    expect(r.hostile.message.length).toBeLessThan(10_000);
    expect(r.bystander).toMatchObject({ status: 200 });
    expect(r.bystander.finish).toBeTruthy();
  });
});

describe('batch rows per key (issue 26)', () => {
  it('counts choices, not requests, against a key: n = 64 is a 400, a key holding 32 rows gets 429, others are served', async () => {
    const held = await h.page.evaluate(
      async ({ key, model }) => {
        const ask = [{ role: 'user', content: 'What is 3 + 4?' }];
        const send = (n: number, stream: boolean) =>
          fetch('/v1/chat/completions', {
            method: 'POST',
            headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model, messages: ask, n, max_tokens: 1000, ignore_eos: true, stream }),
          });
        const all = await send(64, false);
        const hog = await send(32, true);
        (globalThis as any).__hog = hog;
        const more = await send(1, false);
        return {
          all: { status: all.status, json: await all.json() },
          hog: hog.status,
          more: { status: more.status, retryAfter: more.headers.get('Retry-After'), json: await more.json() },
        };
      },
      { key: hostile, model: MODEL },
    );
    try {
      expect(held.all.status).toBe(400);
      expect(held.all.json.error).toMatchObject({ param: 'n' });
      expect(held.all.json.error.message).toMatch(/one API key may hold at most 32 batch rows/);
      expect(held.hog).toBe(200);
      expect(held.more).toMatchObject({
        status: 429,
        retryAfter: '1',
        json: { error: { message: 'Concurrency limit reached for requests' } },
      });
      const chat = await complete(h.page, bystander, { model: MODEL, messages: ASK, max_tokens: 4, temperature: 0 });
      expect(chat.ok, JSON.stringify(chat)).toBe(true);
    } finally {
      await h.page.evaluate(() => (globalThis as any).__hog.body?.cancel());
    }
  });
});
