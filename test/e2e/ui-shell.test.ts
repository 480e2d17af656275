// The app shell's behaviour around the engine: when the tab hosting the engine closes, another
// tab's views reconnect by themselves; when the browser has no WebGPU the app says what is
// needed instead of failing silently; the chat view and a narrow window, for the screenshots.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_FLAGS, openApp, startHearth, type Hearth } from './harness';
import { goTo, screenshot } from './ui-helpers';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

it('reconnects its views when the engine host tab closes', { timeout: 120_000 }, async () => {
  const second = await openApp(h.context, h.server, '/#/keys');
  expect(await second.evaluate(() => globalThis.hearth.isEngineHost)).toBe(false);
  const connection = second.locator('hearth-app [data-field="connection"]');
  await connection.and(second.locator('[data-state="connected"]')).waitFor();
  // Every state the indicator goes through from here on.
  await second.evaluate(() => {
    const el = document.querySelector('hearth-app')!.shadowRoot!.querySelector<HTMLElement>('[data-field="connection"]')!;
    const seen: string[] = ((globalThis as { seenStates?: string[] }).seenStates = []);
    new MutationObserver(() => seen.push(el.dataset.state ?? '')).observe(el, { attributes: true });
  });
  await h.page.close();
  // The feed drops, then comes back once this tab hosts the engine.
  await second.waitForFunction(() => globalThis.hearth.isEngineHost, undefined, { timeout: 60_000 });
  await second.waitForFunction(
    () => {
      const seen = (globalThis as { seenStates?: string[] }).seenStates ?? [];
      return seen.includes('reconnecting') && seen.at(-1) === 'connected';
    },
    undefined,
    { timeout: 60_000 },
  );
  // The view still works: a key created through it is listed.
  const view = second.locator('hearth-keys');
  await view.getByLabel('Name').fill('after-move');
  await view.getByRole('button', { name: 'Create key' }).click();
  await view.locator('tr[data-key="after-move"]').waitFor({ timeout: 30_000 });
  await view.locator('[data-field="secret"]').waitFor();
  h.page = second;
});

it('shows the chat view and works in a 360 px wide window', async () => {
  await goTo(h.page, 'Chat');
  await h.page.locator('hearth-chat-playground').waitFor();
  await h.page.locator('hearth-app [data-field="connection"][data-state="connected"]').waitFor();
  await screenshot(h.page, 'chat');
  await h.page.setViewportSize({ width: 360, height: 740 });
  // Every view fits: nothing overflows the window sideways (wide tables scroll in their card).
  for (const [title, tag] of [
    ['Models', 'hearth-base-models tr'],
    ['Training', 'hearth-training h2'],
    ['Runs', 'hearth-runs h2'],
    ['Demo', 'hearth-demo h2'],
    ['Keys', 'hearth-keys tr'],
    ['Settings', 'hearth-engine-status [data-field="limits"]'],
    ['API', 'hearth-api-reference details'],
    ['Chat', 'hearth-chat-playground'],
  ]) {
    await goTo(h.page, title);
    await h.page.locator(tag).first().waitFor();
    expect([title, await h.page.evaluate(() => document.documentElement.scrollWidth)]).toEqual([title, 360]);
  }
  await goTo(h.page, 'Keys');
  await screenshot(h.page, 'narrow', { dark: false });
});

it('explains what is needed when the browser has no WebGPU', async () => {
  // Chromium on Linux without --enable-unsafe-webgpu, and navigator.gpu taken away from pages.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS.filter((f) => f !== '--enable-unsafe-webgpu'),
  });
  try {
    const context = await browser.newContext();
    await context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true }));
    const page = await openApp(context, h.server);
    const notice = page.locator('hearth-gpu-notice [data-field="gpu-notice"]');
    await notice.waitFor({ timeout: 30_000 });
    const text = await notice.innerText();
    expect(text).toContain('This browser has no WebGPU');
    expect(text).toMatch(/Chrome or Edge 113/);
    await expect(page.locator('hearth-gpu-notice [role="alert"]').count()).resolves.toBe(1);
    // The rest of the app still answers: keys are listed.
    await goTo(page, 'Keys');
    await page.locator('hearth-keys tr[data-key="admin"]').waitFor();
    await screenshot(page, 'no-webgpu', { dark: false });
    // Without Service Workers nothing can answer /v1: the page says so at once.
    const noSw = await browser.newContext();
    await noSw.addInitScript(() => delete (Navigator.prototype as { serviceWorker?: unknown }).serviceWorker);
    const bare = await noSw.newPage();
    await bare.goto(h.server.url);
    await bare.locator('#hearth-boot-error').waitFor();
    expect(await bare.locator('#hearth-boot-error').innerText()).toMatch(/^Hearth cannot start here: This browser has no Service Workers/);
  } finally {
    await browser.close();
  }
});
