// Engine hosting across tabs, through the real Service Worker and Web Locks: one tab hosts, a
// closed host is replaced by another open tab within seconds, a request with no host gets 503
// after a bounded wait, a request in flight when the host dies does not hang, and streamed
// responses arrive chunk by chunk.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { api, BLANK_PATH, launchBrowser, openApp, serveDist, type AppServer } from './harness';
import type { Browser } from 'playwright-core';

let server: AppServer;
let browser: Browser;
beforeAll(async () => {
  server = await serveDist();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const isHost = (page: Page) => page.evaluate(() => globalThis.hearth.isEngineHost);

async function waitUntil(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (await check()) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Opens a page of the origin that is controlled by the Service Worker but is not the app. */
async function openBlank(context: import('playwright-core').BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(server.url + BLANK_PATH);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  return page;
}

describe('engine host election', () => {
  it('lets exactly one tab host, and another open tab take over when it closes', async () => {
    const context = await browser.newContext();
    const first = await openApp(context, server);
    const second = await openApp(context, server);
    const key = await first.evaluate(() => globalThis.hearth.adminKey());
    expect([await isHost(first), await isHost(second)]).toEqual([true, false]);
    const model = await api(second, 'POST', '/v1/preview/models', {
      key,
      body: { project: 'p', name: 'survivor', base_model: 'hearth/tiny-chat' },
    });
    expect(model.status).toBe(200);

    await first.close();
    const tookMs = await waitUntil('the second tab hosts', () => isHost(second));
    expect(tookMs).toBeLessThan(10_000);
    const after = await api(second, 'GET', `/v1/preview/models/${model.json.id}`, { key });
    expect(after.status).toBe(200);
    expect(after.json.name).toBe('survivor');
    expect(await second.evaluate(() => globalThis.hearth.adminKey())).toBe(key);
    await context.close();
  });

  it('answers 503 with a JSON reason when no tab hosts the engine, after a bounded wait', async () => {
    const context = await browser.newContext();
    const app = await openApp(context, server);
    const key = await app.evaluate(() => globalThis.hearth.adminKey());
    const blank = await openBlank(context);
    expect((await api(blank, 'GET', '/v1/preview/models', { key })).status).toBe(200);

    await app.close();
    const started = Date.now();
    const [res, chat] = await Promise.all([
      api(blank, 'GET', '/v1/preview/models', { key }),
      api(blank, 'POST', '/v1/chat/completions', { key, body: { messages: [] } }),
    ]);
    expect(res.status).toBe(503);
    expect(res.json.detail).toMatch(/No Hearth engine is running/);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(chat.status).toBe(503);
    expect(chat.json.error).toMatchObject({ type: 'ServiceUnavailableError', code: 503 });

    // Opening the app again brings the engine back, with the same data.
    const again = await openApp(context, server);
    expect(await again.evaluate(() => globalThis.hearth.adminKey())).toBe(key);
    expect((await api(blank, 'GET', '/v1/preview/models', { key })).status).toBe(200);
    await context.close();
  });
});

describe('Service Worker restarts', () => {
  it('reconnects to the engine after the browser stops the idle Service Worker', async () => {
    const context = await browser.newContext();
    const app = await openApp(context, server);
    const key = await app.evaluate(() => globalThis.hearth.adminKey());
    const blank = await openBlank(context);
    const created = await api(blank, 'POST', '/v1/preview/models', {
      key,
      body: { project: 'p', name: 'before-restart', base_model: 'hearth/tiny-chat' },
    });
    expect(created.status).toBe(200);

    // Browsers stop idle Service Workers (losing their port to the engine); do it now.
    const cdp = await context.newCDPSession(app);
    let stopped = false;
    cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) => {
      if (versions.some((v) => v.runningStatus === 'stopped')) stopped = true;
    });
    await cdp.send('ServiceWorker.enable');
    await cdp.send('ServiceWorker.stopAllWorkers');
    await waitUntil('the Service Worker stopped', async () => stopped);

    const after = await api(blank, 'GET', `/v1/preview/models/${created.json.id}`, { key });
    expect(after.status).toBe(200);
    expect(after.json.name).toBe('before-restart');
    await context.close();
  });
});

describe('streaming through the Service Worker', () => {
  it('delivers a streamed response chunk by chunk, and ends it when the host dies mid-stream', async () => {
    const context = await browser.newContext();
    const app = await openApp(context, server);
    const key = await app.evaluate(() => globalThis.hearth.adminKey());
    const blank = await openBlank(context);
    const modelId = (
      await api(app, 'POST', '/v1/preview/models', { key, body: { project: 'p', name: 'streamed', base_model: 'hearth/tiny-chat' } })
    ).json.id;

    // Open the engine status feed from the blank page and read its first event.
    const first = await blank.evaluate(async (key) => {
      const res = await fetch('/v1/preview/engine/events', { headers: { Authorization: `Bearer ${key}` } });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      (globalThis as any).feed = reader;
      const { value } = await reader.read();
      return { status: res.status, type: res.headers.get('content-type'), value };
    }, key);
    expect(first.status).toBe(200);
    expect(first.type).toMatch(/text\/event-stream/);
    expect(first.value).toMatch(/^event: status\n/);

    // While the stream stays open, a change (a job runs) arrives as a later chunk.
    const job = await api(app, 'POST', '/v1/preview/training-jobs', {
      key,
      body: { model_id: modelId, trajectory_groups: [{ trajectories: [] }] },
    });
    expect(job.status).toBe(200);
    const next = await blank.evaluate(async () => (await (globalThis as any).feed.read()).value as string);
    expect(next).toMatch(/event: status/);

    // The host tab dies while the stream is open: the reader must error or end, not hang.
    await app.close();
    const outcome = await blank.evaluate(async () => {
      const reader = (globalThis as any).feed as ReadableStreamDefaultReader<string>;
      const deadline = Date.now() + 20_000;
      try {
        while (Date.now() < deadline) {
          const r = await Promise.race([reader.read(), new Promise<'hung'>((ok) => setTimeout(() => ok('hung'), deadline - Date.now()))]);
          if (r === 'hung') return 'hung';
          if (r.done) return 'ended';
        }
        return 'hung';
      } catch (err) {
        return `errored: ${(err as Error).message}`;
      }
    });
    expect(outcome).not.toBe('hung');
    await context.close();
  });
});
