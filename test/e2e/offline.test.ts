// The installable offline app: after a first visit the Service Worker has the app shell in its
// cache, so with the network gone (Playwright offline and the server stopped) the app reloads,
// boots its engine from IndexedDB and answers /v1 as before; /v1 itself is never cached, and
// files outside the shell still need the network.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

describe('offline after the first load', () => {
  it('serves the manifest, caches the shell, and reloads and answers /v1 with no network', async () => {
    const manifest = await api(h.page, 'GET', '/manifest.webmanifest');
    expect(manifest.status).toBe(200);
    expect(manifest.json).toMatchObject({ name: 'Hearth', start_url: '/', display: 'standalone' });
    for (const icon of manifest.json.icons as { src: string }[]) expect((await api(h.page, 'GET', icon.src)).status, icon.src).toBe(200);
    const linked = await h.page.evaluate(() => document.querySelector('link[rel="manifest"]')?.getAttribute('href'));
    expect(linked).toBe('/manifest.webmanifest');

    // A registered model: data the engine must find again after the offline reload.
    const model = await api(h.page, 'POST', '/v1/preview/models', {
      key: h.key,
      body: { project: 'offline', name: 'm', base_model: 'hearth/tiny-chat' },
    });
    expect(model.status).toBe(200);

    // The install has filled the shell cache: index.html ("/") and every script of the build.
    const cached = await h.page.waitForFunction(
      async () => {
        const names = (await caches.keys()).filter((n) => n.startsWith('hearth-shell-'));
        if (names.length !== 1) return null;
        const keys = (await (await caches.open(names[0])).keys()).map((r) => new URL(r.url).pathname);
        return keys.includes('/') && keys.some((k) => k.startsWith('/assets/')) ? keys : null;
      },
      undefined,
      { timeout: 30_000 },
    );
    const keys = (await cached.jsonValue()) as string[];
    expect(keys).toContain('/models/index.json');
    expect(keys.some((k) => k.startsWith('/v1'))).toBe(false);

    await h.context.setOffline(true);
    await h.server.close();
    await h.page.reload();
    await h.page.waitForFunction(() => typeof globalThis.hearth?.ready === 'function', undefined, { timeout: 30_000 });
    await h.page.evaluate(() => globalThis.hearth.ready());
    expect(await h.page.evaluate(() => !!document.querySelector('hearth-app'))).toBe(true);

    const models = await api(h.page, 'GET', '/v1/preview/models', { key: h.key });
    expect(models.status).toBe(200);
    expect(models.json.data.map((m: { id: string }) => m.id)).toContain(model.json.id);
    const bases = await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key });
    expect(bases.status).toBe(200);
    expect(bases.json.data.map((m: { id: string }) => m.id)).toContain('hearth/tiny-chat');
    // Really offline: a file outside the shell cannot be fetched.
    const outside = await h.page.evaluate(() =>
      fetch('/models/tiny-chat/config.json').then(
        (r) => r.status,
        () => 'network error',
      ),
    );
    expect(outside).toBe('network error');
  });
});
