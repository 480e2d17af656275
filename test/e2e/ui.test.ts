// The Lit shell as a person sees it: engine status (adapter, features, limits), the admin key
// with its copy button, and navigation between views.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

it('shows the engine status: GPU adapter, features and limits, base models', async () => {
  const status = h.page.locator('hearth-engine-status');
  await status.locator('[data-field="adapter"]').waitFor();
  const adapter = await status.locator('[data-field="adapter"]').innerText();
  const engine = await h.page.evaluate(async (key) => (await fetch('/v1/preview/engine', { headers: { Authorization: `Bearer ${key}` } })).json(), h.key);
  expect(engine.gpu).not.toBeNull();
  expect(adapter).toContain(engine.gpu.adapter.architecture || engine.gpu.adapter.vendor);
  for (const feature of engine.gpu.features) expect(await status.locator('[data-field="features"]').innerText()).toContain(feature);
  expect(await status.locator('[data-field="limits"]').innerText()).toContain('maxStorageBufferBindingSize');
  expect(await status.locator('[data-field="state"]').innerText()).toBe('ready');
  await status.getByText('hearth/tiny-chat (default)').waitFor({ timeout: 5000 });
});

it('shows the admin key on demand and copies it', async () => {
  await h.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.server.url });
  await h.page.getByRole('link', { name: 'API key' }).click();
  expect(h.page.url()).toMatch(/#\/keys$/);
  const field = h.page.locator('hearth-admin-key [data-field="admin-key"]');
  await field.waitFor();
  expect(await field.innerText()).not.toContain(h.key);
  await h.page.getByRole('button', { name: 'Show' }).click();
  expect(await field.innerText()).toBe(h.key);
  await h.page.getByRole('button', { name: 'Copy admin key' }).click();
  await h.page.getByRole('button', { name: 'Copy admin key' }).filter({ hasText: 'Copied' }).waitFor();
  expect(await h.page.evaluate(() => navigator.clipboard.readText())).toBe(h.key);
  await h.page.screenshot({ path: 'test-results/ui-admin-key.png' });

  await h.page.getByRole('link', { name: 'Engine' }).click();
  await h.page.locator('hearth-engine-status [data-field="adapter"]').waitFor();
  await h.page.screenshot({ path: 'test-results/ui-engine.png' });
});
