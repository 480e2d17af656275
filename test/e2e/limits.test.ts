// Hostile requests against the one engine, through the real Service Worker, engine worker and
// IndexedDB (issue 10): each is refused in its route family's error shape (never a 500, never no
// answer), and a bystander principal's chat completes beside it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok, ASK, MODEL } from './chat-helpers';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';

let h: Hearth;
/** Another principal's key: the one whose chat must keep working. */
let bystander: string;
/** The key that sends hostile requests. */
let hostile: string;

beforeAll(async () => {
  h = await startHearth();
  await loadOpenAI(h.page);
  bystander = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'bystander' } })).json.key;
  hostile = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'hostile' } })).json.key;
});
afterAll(async () => {
  await h?.close();
});

/** A chat by the bystander that must complete. */
const bystanderChat = () => ok(h.page, bystander, { model: MODEL, messages: ASK, max_tokens: 4, temperature: 0 });

describe('deeply nested JSON (issue 10, item 5)', () => {
  const nested = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`;

  it('is refused in each family shape on every JSON route, and the engine keeps serving', async () => {
    const model = (await api(h.page, 'POST', '/v1/preview/models', { key: hostile, body: { entity: null, project: 'e2e', name: 'nest', base_model: MODEL } })).json;
    const chat = await api(h.page, 'POST', '/v1/chat/completions', { key: hostile, rawBody: nested, headers: { 'Content-Type': 'application/json' } });
    expect(chat.status).toBe(400);
    expect(chat.json.error).toMatchObject({ type: 'BadRequestError', code: 400 });
    expect(chat.json.error.message).toMatch(/nested deeper than 64/);
    for (const path of ['/v1/preview/training-jobs', `/v1/preview/models/${model.id}/log`, '/v1/preview/models', '/v1/preview/sft-training-jobs']) {
      const r = await api(h.page, 'POST', path, { key: hostile, rawBody: nested, headers: { 'Content-Type': 'application/json' } });
      expect(r.status, path).toBe(422);
      expect(r.json.detail[0], path).toMatchObject({ loc: ['body'], type: 'json_invalid', ctx: { max_depth: 64 } });
    }
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
  });
});

describe('request bodies are cut at their route cap while read (issue 10, item 6)', () => {
  /** POSTs a streamed body of `mib` MiB (1 MiB chunks) from the page; how many MiB the Service Worker pulled. */
  const streamBody = (path: string, key: string, mib: number) =>
    h.page.evaluate(
      async ({ path, key, mib }) => {
        let pulled = 0;
        const chunk = new Uint8Array(1 << 20).fill(0x20);
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (pulled >= mib) return controller.close();
            pulled++;
            controller.enqueue(chunk.slice());
          },
        });
        const init = { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body, duplex: 'half' };
        const res = await fetch(path, init as RequestInit);
        return { status: res.status, json: await res.json(), pulled };
      },
      { path, key, mib },
    );

  it('answers 413 in each family shape after reading little more than the 32 MiB cap of a 512 MiB body', async () => {
    const chat = streamBody('/v1/chat/completions', hostile, 512);
    const preview = streamBody('/v1/preview/models', hostile, 512);
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
    const [c, p] = await Promise.all([chat, preview]);
    expect(c.status).toBe(413);
    expect(c.json.error).toMatchObject({ code: 413, message: 'The request body is larger than 33554432 bytes.' });
    expect(p.status).toBe(413);
    expect(p.json).toEqual({ detail: 'The request body is larger than 33554432 bytes.' });
    // The stream is cancelled at the cap, not read to its end (the browser may pull a few chunks ahead).
    expect(c.pulled).toBeLessThan(64);
    expect(p.pulled).toBeLessThan(64);
  });
});
