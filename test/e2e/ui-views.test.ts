// The app's quick views as a person uses them, in one browser and one tab: keyboard navigation,
// keys (secret shown once, copy, revoke), settings (engine, storage), the API reference (copy an
// example and run it), models (register, checkpoints, adapter download and import, delete with
// a confirmation), runs (charts after /log, kept current while open, trajectories rendered as
// text), base models.
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, startHearth, type Hearth } from './harness';
import { acceptNextDialog, goTo, screenshot } from './ui-helpers';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
  await h.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.server.url });
  await h.page.setViewportSize({ width: 1200, height: 900 });
});
afterAll(async () => {
  await h?.close();
});

const clipboard = () => h.page.evaluate(() => navigator.clipboard.readText());

it('moves between views with the keyboard', async () => {
  const nav = h.page.locator('hearth-app nav');
  await nav.getByRole('link', { name: 'Chat', exact: true }).focus();
  await h.page.keyboard.press('ArrowRight');
  await h.page.keyboard.press('ArrowRight');
  await h.page.keyboard.press('Enter');
  await h.page.waitForURL(/#\/training$/);
  // The hash changes before Lit re-renders the nav, so wait for the rendered mark, not one read.
  await nav.locator('a[aria-current="page"]', { hasText: /^Training$/ }).waitFor();
  await h.page.keyboard.press('End');
  await h.page.keyboard.press('Enter');
  await h.page.waitForURL(/#\/api$/);
  await h.page.locator('hearth-api-reference h2').waitFor();
  await h.page.locator('hearth-app [data-field="connection"][data-state="connected"]').waitFor();
});

it('creates a key, shows its secret once, copies it, and revokes it', async () => {
  await goTo(h.page, 'Keys');
  const view = h.page.locator('hearth-keys');
  // The admin key: hidden until shown, then copied.
  const admin = view.locator('[data-field="admin-key"]');
  await admin.waitFor();
  expect(await admin.innerText()).not.toContain(h.key);
  await view.getByRole('button', { name: 'Show' }).click();
  expect(await admin.innerText()).toBe(h.key);
  await view.getByRole('button', { name: 'Copy admin key' }).click();
  expect(await clipboard()).toBe(h.key);

  await view.getByLabel('Name').fill('ui-agent');
  await view.getByRole('button', { name: 'Create key' }).click();
  const secret = await view.locator('[data-field="secret"]').innerText();
  expect(secret.length).toBeGreaterThan(20);
  await view.getByRole('button', { name: 'Copy new key' }).click();
  expect(await clipboard()).toBe(secret);
  const row = view.locator('tr[data-key="ui-agent"]');
  await row.waitFor();
  expect(secret.startsWith((await row.locator('code').innerText()).replace('…', ''))).toBe(true);
  expect((await api(h.page, 'GET', '/v1/models', { key: secret })).status).toBe(200);
  await screenshot(h.page, 'keys');

  // Shown once: leaving the view and coming back shows no secret.
  await goTo(h.page, 'Settings');
  await goTo(h.page, 'Keys');
  await row.waitFor();
  expect(await view.locator('[data-field="secret"]').count()).toBe(0);

  const dialog = acceptNextDialog(h.page);
  await row.getByRole('button', { name: 'Revoke ui-agent' }).click();
  expect(await dialog).toContain('ui-agent');
  await row.waitFor({ state: 'detached' });
  expect((await api(h.page, 'GET', '/v1/models', { key: secret })).status).toBe(401);
});

it('shows the engine (adapter, features, limits) and storage per kind', async () => {
  await goTo(h.page, 'Settings');
  const view = h.page.locator('hearth-settings');
  const engine = (await api(h.page, 'GET', '/v1/preview/engine', { key: h.key })).json;
  await view.locator('[data-field="adapter"]').waitFor();
  expect(await view.locator('[data-field="adapter"]').innerText()).toContain(engine.gpu.adapter.architecture || engine.gpu.adapter.vendor);
  for (const f of engine.gpu.features) expect(await view.locator('[data-field="features"]').innerText()).toContain(f);
  expect(await view.locator('[data-field="limits"]').innerText()).toContain('maxStorageBufferBindingSize');
  // Storage: GET /v1/preview/storage (ui-api). Weights are cached once the bundled model loaded.
  await view.locator('[data-field="usage"]').waitFor({ timeout: 20_000 });
  expect(await view.locator('[data-field="usage"]').innerText()).toMatch(/used of .*(GiB|MiB|TiB)/);
  expect(await view.locator('[data-kind="weights"]').innerText()).toMatch(/B$/);
  await screenshot(h.page, 'settings');
});

it('lists every endpoint with a fetch example that runs against this origin', async () => {
  await goTo(h.page, 'API');
  const view = h.page.locator('hearth-api-reference');
  for (const path of [
    '/v1/chat/completions',
    '/v1/preview/models',
    '/v1/preview/training-jobs',
    '/v1/preview/api-keys',
    '/v1/preview/storage',
  ]) {
    expect(await view.locator(`details[data-endpoint$=" ${path}"]`).count()).toBeGreaterThan(0);
  }
  const models = view.locator('details[data-endpoint="GET /v1/models"]');
  await models.locator('summary').click();
  await models.getByRole('button', { name: 'Copy fetch example for GET /v1/models' }).click();
  const code = await clipboard();
  expect(code).toContain(`${h.server.url}/v1/models`);
  // Run the copied example as a person would in the console, with their key.
  const logged = await h.page.evaluate(
    async ({ code, key }) => {
      const out: unknown[] = [];
      const log = console.log;
      console.log = (...a: unknown[]) => out.push(...a);
      try {
        await new (Object.getPrototypeOf(async () => {}).constructor)('key', code)(key);
      } finally {
        console.log = log;
      }
      return out;
    },
    { code, key: h.key },
  );
  expect((logged[0] as { data: { id: string }[] }).data.map((m) => m.id)).toContain('hearth/tiny-chat');
  const chat = view.locator('details[data-endpoint="POST /v1/chat/completions"]');
  await chat.locator('summary').click();
  await chat.getByRole('button', { name: /Copy openai example/ }).click();
  expect(await clipboard()).toContain(`baseURL: '${h.server.url}/v1'`);
  await screenshot(h.page, 'api-reference');
});

it('registers a model, downloads a checkpoint as an adapter, imports it, deletes a model after a confirmation', async () => {
  await goTo(h.page, 'Models');
  const view = h.page.locator('hearth-registered-models');
  await view.getByLabel('Name').first().fill('ui-model');
  await view.getByRole('button', { name: 'Register' }).click();
  const model = view.locator('details[data-model="ui-model"]');
  await model.waitFor();
  await model.locator('summary').click();
  await model.locator('tr[data-step="0"]').waitFor();

  const download = h.page.waitForEvent('download');
  await model.getByRole('button', { name: 'Download step 0 as a PEFT adapter' }).click();
  const zipPath = await (await download).path();
  const zip = readFileSync(zipPath);
  expect(zip.subarray(0, 2).toString()).toBe('PK');
  const ggufDownload = h.page.waitForEvent('download');
  await model.getByRole('button', { name: 'Download step 0 as a GGUF adapter for llama.cpp' }).click();
  const gguf = await ggufDownload;
  expect(gguf.suggestedFilename()).toBe('ui-model-step0-adapter.gguf');
  expect(
    readFileSync(await gguf.path())
      .subarray(0, 4)
      .toString(),
  ).toBe('GGUF');

  const importForm = view.locator('form[aria-labelledby="import"]');
  await importForm.getByLabel('Name').fill('ui-imported');
  await importForm.getByLabel('Adapter files').setInputFiles({ name: 'adapter.zip', mimeType: 'application/zip', buffer: zip });
  await importForm.getByRole('button', { name: 'Import' }).click();
  const imported = view.locator('details[data-model="ui-imported"]');
  await imported.waitFor();
  await screenshot(h.page, 'models');

  await imported.locator('summary').click();
  await imported.locator('tr[data-step]').first().waitFor();
  // Delete one checkpoint: the newest goes, the others stay.
  const steps = await imported.locator('tr[data-step]').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-step'))));
  expect(steps.length).toBeGreaterThan(1);
  const last = Math.max(...steps);
  await imported.getByLabel(`Select step ${last}`).check();
  const cpDialog = acceptNextDialog(h.page);
  await imported.getByRole('button', { name: 'Delete selected checkpoints' }).click();
  expect(await cpDialog).toMatch(new RegExp(`Delete checkpoint step ${last} of ui-imported\\?`));
  await imported.locator(`tr[data-step="${last}"]`).waitFor({ state: 'detached' });
  await expect.poll(() => imported.locator('tr[data-step]').count()).toBe(steps.length - 1);
  const dialog = acceptNextDialog(h.page);
  await imported.getByRole('button', { name: 'Delete model ui-imported' }).click();
  const message = await dialog;
  expect(message).toMatch(
    new RegExp(`ui-imported\\? This deletes ${steps.length - 1} checkpoints? .*trajectory logs, training jobs and run history`),
  );
  await imported.waitFor({ state: 'detached' });
  const list = (await api(h.page, 'GET', '/v1/preview/models', { key: h.key })).json.data.map((m: { name: string }) => m.name);
  expect(list).toContain('ui-model');
  expect(list).not.toContain('ui-imported');
});

it('charts a run after /log and shows its trajectories as conversations, as text', async () => {
  const models = (await api(h.page, 'GET', '/v1/preview/models', { key: h.key })).json.data;
  const model = models.find((m: { name: string }) => m.name === 'ui-model');
  const group = (reward: number) => ({
    trajectories: [
      {
        messages_and_choices: [
          { role: 'user', content: 'Say <b>bold</b> & <img src=x onerror=alert(1)>' },
          {
            finish_reason: 'tool_calls',
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
            },
          },
          { role: 'tool', tool_call_id: 'call_1', content: '42' },
        ],
        reward,
        metrics: { turns: 2 },
      },
      { messages_and_choices: [{ role: 'user', content: 'hi' }], reward: reward / 2 },
    ],
  });
  for (const [split, reward] of [
    ['train', 0.4],
    ['val', 0.5],
  ] as const) {
    expect(
      (await api(h.page, 'POST', `/v1/preview/models/${model.id}/log`, { key: h.key, body: { split, trajectory_groups: [group(reward)] } }))
        .status,
    ).toBe(200);
  }
  await h.page.evaluate((id) => (location.hash = `#/runs/${id}`), model.id);
  const view = h.page.locator('hearth-runs');
  // GET /v1/preview/models/{id}/run and /trajectories (ui-api).
  const reward = view.locator('hearth-line-chart[data-metric="reward"]');
  await h.page.waitForFunction((el) => Number(el?.dataset.points) >= 2, await reward.elementHandle({ timeout: 20_000 }));
  const trajectory = view.locator('hearth-trajectory').first();
  await trajectory.waitFor();
  expect(await trajectory.locator('[data-role="user"] .text').innerText()).toBe('Say <b>bold</b> & <img src=x onerror=alert(1)>');
  expect(await trajectory.locator('[data-field="reward"]').innerText()).toMatch(/reward 0\.(4|5)|reward 0\.2/);
  expect(await trajectory.locator('b, img').count()).toBe(0);
  expect(await trajectory.locator('[data-field="tool-call"]').innerText()).toContain('lookup({"q":"x"})');
  // Logged while the view is open: the chart gains the new split's point with no click.
  expect(
    (
      await api(h.page, 'POST', `/v1/preview/models/${model.id}/log`, {
        key: h.key,
        body: { split: 'test', trajectory_groups: [group(0.8)] },
      })
    ).status,
  ).toBe(200);
  await h.page.waitForFunction((el) => Number(el?.dataset.points) >= 3, await reward.elementHandle(), { timeout: 20_000 });
  await view.getByLabel('Split').selectOption('val');
  await view.locator('.group strong', { hasText: 'val, step 0' }).first().waitFor();
  expect(await view.locator('.group strong', { hasText: 'train' }).count()).toBe(0);
  await screenshot(h.page, 'runs');
});

it('lists base models with what they are for, architecture, size and status', async () => {
  await goTo(h.page, 'Models');
  const row = h.page.locator('hearth-base-models tr[data-base-model="hearth/tiny-chat"]');
  // GET /v1/preview/base-models (ui-api).
  await row.waitFor({ timeout: 20_000 });
  const text = await row.innerText();
  expect(text).toMatch(/qwen|llama/i);
  expect(text).toMatch(/(KiB|MiB)/);
  expect(['available', 'cached']).toContain(await row.locator('[data-field="status"]').innerText());
  // The bundled JSON model says it is the one for structured outputs (issue 27).
  const json = h.page.locator('hearth-base-models tr[data-base-model="hearth/tiny-json"] [data-field="description"]');
  expect(await json.innerText()).toMatch(/structured outputs/);
  await screenshot(h.page, 'models');
  await screenshot(h.page, 'models-narrow', { width: 360, dark: false });
});

it('adds a base model from files picked from disk, and removes it', async () => {
  const dir = fileURLToPath(new URL('../../public/models/tiny-qwen3/', import.meta.url));
  const files = readdirSync(dir).map((name) => ({ name, mimeType: 'application/octet-stream', buffer: readFileSync(join(dir, name)) }));
  const panel = h.page.locator('hearth-base-models');
  await panel.getByRole('button', { name: 'Files from disk' }).click();
  await panel.getByLabel('Model files').setInputFiles(files);
  await panel.getByLabel('Model id (optional)').fill('local/picked-qwen3');
  await panel.getByRole('button', { name: 'Add model' }).click();
  const row = panel.locator('tr[data-base-model="local/picked-qwen3"]');
  await row.waitFor({ timeout: 60_000 });
  expect(await panel.locator('p.error').count()).toBe(0);
  expect(await row.locator('[data-field="status"]').innerText()).toBe('cached');
  expect(await row.innerText()).toMatch(/qwen3[\s\S]*385\.5k/);
  const models = (await api(h.page, 'GET', '/v1/models', { key: h.key })).json.data.map((m: { id: string }) => m.id);
  expect(models).toContain('local/picked-qwen3');

  const dialog = acceptNextDialog(h.page);
  await row.getByRole('button', { name: 'Remove cached weights of local/picked-qwen3' }).click();
  expect(await dialog).toContain('local/picked-qwen3');
  await row.waitFor({ state: 'detached' });
});

it('downloads a base model from a URL, to load quantized to Q8_0, until it is cached', { timeout: 120_000 }, async () => {
  const url = `${h.server.url}/models/tiny-qwen2/`;
  const panel = h.page.locator('hearth-base-models');
  await panel.getByRole('button', { name: 'URL', exact: true }).click();
  await panel.getByLabel('Folder URL').fill(url);
  await panel.getByLabel('Quantize on load (safetensors)').selectOption('q8_0');
  await panel.getByRole('button', { name: 'Download' }).click();
  const row = panel.locator(`tr[data-base-model="${url}"]`);
  await row.waitFor();
  expect(await panel.locator('p.error').count()).toBe(0);
  expect(await panel.getByLabel('Folder URL').inputValue()).toBe('');
  await row.locator('[data-field="status"]', { hasText: 'cached' }).waitFor({ timeout: 100_000 });
  expect(await row.innerText()).toMatch(/qwen2[\s\S]*617\.0k/);
  expect(await row.locator('[data-field="format"]').innerText()).toMatch(/^safetensors as Q8_0 · [\d.]+ [KM]i?B on GPU$/);
});

/** Another origin serving tiny-qwen2's files slowly (16 KiB per 40 ms), with ranges, ETags and CORS: a download long enough to watch and reload through. */
async function slowMirror(): Promise<{ url: string; rangeStarts: number[]; close(): Promise<void> }> {
  const dir = fileURLToPath(new URL('../../public/models/tiny-qwen2/', import.meta.url));
  const rangeStarts: number[] = [];
  const server: Server = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Range, If-Range');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, ETag, Content-Length, Accept-Ranges');
    if (req.method === 'OPTIONS') return res.writeHead(204).end();
    const name =
      decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
        .split('/')
        .pop() ?? '';
    let body: Buffer;
    try {
      body = readFileSync(join(dir, name));
    } catch {
      return res.writeHead(404).end();
    }
    const range = /bytes=(\d+)-/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    if (range) rangeStarts.push(start);
    const part = body.subarray(start);
    res.writeHead(range ? 206 : 200, {
      'Content-Length': String(part.length),
      ETag: `"v1-${name}"`,
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${start}-${body.length - 1}/${body.length}` } : {}),
    });
    if (!name.endsWith('.safetensors')) return res.end(part);
    let at = 0;
    const timer = setInterval(() => {
      if (res.destroyed || at >= part.length) {
        clearInterval(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(part.subarray(at, at + 16384));
      at += 16384;
    }, 40);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/tiny-qwen2/`,
    rangeStarts,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

it('shows download progress that survives a reload, and the download resumes where it was', { timeout: 150_000 }, async () => {
  const mirror = await slowMirror();
  try {
    await goTo(h.page, 'Models');
    const panel = h.page.locator('hearth-base-models');
    await panel.getByRole('button', { name: 'URL', exact: true }).click();
    await panel.getByLabel('Folder URL').fill(mirror.url);
    await panel.getByRole('button', { name: 'Download' }).click();
    const row = panel.locator(`tr[data-base-model="${mirror.url}"]`);
    const progress = row.locator('[data-field="progress"]');
    // Bytes, speed and time left while the weights arrive.
    await h.page.waitForFunction(
      (el) =>
        /^[1-9][\d.]* (KiB|MiB) of [\d.]+ (KiB|MiB) · [\d.]+ (KiB|MiB)\/s · \d+ s left/.test(
          el?.querySelector('.muted')?.textContent ?? '',
        ),
      await progress.elementHandle({ timeout: 30_000 }),
      { timeout: 30_000 },
    );
    await screenshot(h.page, 'models-download', { dark: false });
    await h.page.reload();
    await h.page.waitForFunction(() => typeof globalThis.hearth?.ready === 'function');
    await h.page.evaluate(() => globalThis.hearth.ready());
    await row.waitFor({ timeout: 30_000 });
    // Still listed with its progress after the reload; the new engine host carries on (or it waits paused until asked again).
    expect(['downloading', 'paused', 'cached']).toContain(await row.locator('[data-field="status"]').innerText());
    if ((await row.locator('[data-field="status"]').innerText()) === 'paused')
      await row.getByRole('button', { name: /^Resume download/ }).click();
    await row.locator('[data-field="status"]', { hasText: 'cached' }).waitFor({ timeout: 100_000 });
    expect(mirror.rangeStarts.some((s) => s > 0)).toBe(true);
  } finally {
    await mirror.close();
  }
});

it('keeps the Hugging Face token write-only, and downloads a recommended model in one click through the mirror set beside it', async () => {
  await goTo(h.page, 'Settings');
  const settings = h.page.locator('hearth-settings');
  await settings.locator('[data-field="token"]', { hasText: 'No token is set.' }).waitFor();
  await settings.getByLabel('Access token').fill('hf_uitoken');
  // The app's own server as the mirror: it has no such repository, so the download is refused.
  await settings.getByLabel('Mirror base URL (optional)').fill(h.server.url);
  await settings.getByRole('button', { name: 'Save' }).click();
  await settings.locator('[data-field="token"]', { hasText: 'A token is set.' }).waitFor();
  expect(await settings.getByLabel('Access token').inputValue()).toBe('');
  expect(await settings.getByLabel('Mirror base URL (optional)').inputValue()).toBe(h.server.url);
  const stored = await api(h.page, 'GET', '/v1/preview/settings', { key: h.key });
  expect(stored.json.huggingface).toEqual({ token_set: true, mirror: h.server.url });
  expect(stored.text).not.toContain('hf_uitoken');

  await goTo(h.page, 'Models');
  const recommended = h.page.locator('hearth-recommended-models');
  const engine = (await api(h.page, 'GET', '/v1/preview/engine', { key: h.key })).json;
  const binding = engine.gpu.limits.maxStorageBufferBindingSize as number;
  // Qwen2.5 1.5B's BF16 embedding (151936 x 1536 x 2 bytes) against this GPU's binding limit.
  const qwen = await recommended.locator('tr[data-recommended="Qwen/Qwen2.5-1.5B-Instruct"]').innerText();
  if (151936 * 1536 * 2 > binding) expect(qwen).toContain(`embedding in ${Math.ceil((151936 * 1536 * 2) / binding)} bindings`);
  else expect(qwen).not.toContain('bindings');
  // Gated repositories say a token is needed, with a link to the Settings field (issue 21: Gemma 3).
  const gemma = recommended.locator('tr[data-recommended="google/gemma-3-270m-it"] [data-field="gated"]');
  expect(await gemma.innerText()).toMatch(/Hugging Face access token in Settings/);
  expect(await gemma.getByRole('link', { name: 'Settings' }).getAttribute('href')).toBe('#/settings');
  const file = 'SmolLM2-135M-Instruct-Q8_0.gguf';
  const row = recommended.locator(`tr[data-recommended="bartowski/SmolLM2-135M-Instruct-GGUF/${file}"]`);
  expect(await row.innerText()).toMatch(/about 136 MiB[\s\S]*about \d+ MiB/);
  await row.getByRole('button', { name: 'Download SmolLM2 135M Instruct GGUF Q8_0' }).click();
  await recommended.locator('p.error', { hasText: `${file} was not found` }).waitFor();
  await screenshot(h.page, 'models-recommended');
  await api(h.page, 'PATCH', '/v1/preview/settings', { key: h.key, body: { huggingface_token: null, huggingface_mirror: null } });
});
