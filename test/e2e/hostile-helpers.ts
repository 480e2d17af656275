/**
 * Helpers shared by the e2e files that send hostile requests (budgets.test.ts,
 * hostile-patterns.test.ts): a bystander principal whose short chat runs beside each hostile
 * request, a model upload with some of tiny-chat's files replaced, and an adapter import.
 *
 * Not here: starting the app (harness.ts), the assertions (the test files).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ASK, complete, MODEL, type ChatOutcome } from './chat-helpers';
import { api, type Hearth } from './harness';

/** tiny-chat's files, as an upload starts from. */
export const TINY_CHAT_DIR = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));

/** Creates the bystander: another principal, whose key chats while the hostile requests run. */
export async function bystanderKey(h: Hearth): Promise<string> {
  const created = await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'bystander' } });
  expect(created.status, created.text).toBe(200);
  return created.json.key;
}

/** Milliseconds each side took, for the log (no test asserts on them: docs/design.md "Tests"). */
export interface BesideTimes {
  hostileMs: number;
  bystanderMs: number;
}

/**
 * Runs `hostile` and, `delayMs` later (the hostile work under way), the bystander's short chat;
 * both must answer. Logs both times under `label`.
 */
export async function beside<T>(h: Hearth, bystander: string, hostile: () => Promise<T>, label = '', delayMs = 0): Promise<T> {
  const started = performance.now();
  const times: BesideTimes = { hostileMs: NaN, bystanderMs: NaN };
  const [result, chat] = await Promise.all([
    hostile().finally(() => (times.hostileMs = performance.now() - started)),
    new Promise((r) => setTimeout(r, delayMs)).then(async () => {
      const sent = performance.now();
      const outcome = await complete(h.page, bystander, { model: MODEL, messages: ASK, max_tokens: 2, temperature: 0 });
      times.bystanderMs = performance.now() - sent;
      return outcome;
    }),
  ]);
  if (label)
    console.log(`[hostile] ${label}: answered in ${times.hostileMs.toFixed(0)} ms; bystander in ${times.bystanderMs.toFixed(0)} ms`);
  expect(chat.ok, JSON.stringify(chat)).toBe(true);
  return result;
}

export const refused = (outcome: ChatOutcome) => {
  expect(outcome.ok).toBe(false);
  return outcome as Extract<ChatOutcome, { ok: false }>;
};

/** Uploads tiny-chat's files with some replaced, as the Models view's folder upload does, as `id`. */
export async function uploadModelWith(h: Hearth, replaced: Record<string, string>, id = 'local/hostile') {
  const names = readdirSync(TINY_CHAT_DIR);
  for (const name of names) {
    const body = replaced[name] ?? readFileSync(TINY_CHAT_DIR + name);
    h.server.files.set(`/__e2e/upload/${name}`, { body, type: 'application/octet-stream' });
  }
  return h.page.evaluate(
    async ({ key, names, id }) => {
      const form = new FormData();
      for (const name of names) form.append('file', new File([await (await fetch(`/__e2e/upload/${name}`)).blob()], name));
      form.append('id', id);
      const res = await fetch('/v1/preview/base-models/files', {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}` },
        body: form,
      });
      return { status: res.status, json: await res.json() };
    },
    { key: h.key, names, id },
  );
}

/** POST /v1/preview/models/import with the given files (name -> bytes), onto tiny-chat. */
export async function importAdapter(h: Hearth, name: string, files: Record<string, Uint8Array>) {
  const encoded = Object.entries(files).map(([n, b]) => ({ name: n, base64: Buffer.from(b).toString('base64') }));
  return h.page.evaluate(
    async ({ key, name, files, base }) => {
      const form = new FormData();
      form.set('project', 'budgets');
      form.set('name', name);
      form.set('base_model', base);
      for (const f of files) form.append('file', new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name));
      const res = await fetch('/v1/preview/models/import', { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
      return { status: res.status, json: await res.json() };
    },
    { key: h.key, name, files: encoded, base: MODEL },
  );
}
