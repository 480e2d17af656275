// Hostile requests against the one engine, through the real Service Worker, engine worker and
// IndexedDB (issue 10): deeply nested JSON, bodies past their cap, oversized chat lists, too many
// chat requests or pending jobs from one key, a request that makes no progress, another key
// touching the shared base models or reading another's job ids, a revoked key's jobs and streams.
// Each is refused or ended in its route family's error shape (never a 500, never no answer), and
// a bystander principal's chat completes beside it.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK, complete, MODEL, ok } from './chat-helpers';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';
import { dumpHearthDb } from './idb';
import { streamUpload } from './upload-stream';

const TINY_CHAT = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));

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
    const model = (
      await api(h.page, 'POST', '/v1/preview/models', {
        key: hostile,
        body: { entity: null, project: 'e2e', name: 'nest', base_model: MODEL },
      })
    ).json;
    const chat = await api(h.page, 'POST', '/v1/chat/completions', {
      key: hostile,
      rawBody: nested,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(chat.status).toBe(400);
    expect(chat.json.error).toMatchObject({ type: 'Bad Request', code: 400 });
    expect(chat.json.error.message).toMatch(/nested deeper than 64/);
    for (const path of [
      '/v1/preview/training-jobs',
      `/v1/preview/models/${model.id}/log`,
      '/v1/preview/models',
      '/v1/preview/sft-training-jobs',
    ]) {
      const r = await api(h.page, 'POST', path, { key: hostile, rawBody: nested, headers: { 'Content-Type': 'application/json' } });
      expect(r.status, path).toBe(422);
      expect(r.json.detail[0], path).toMatchObject({ loc: ['body'], type: 'json_invalid', ctx: { max_depth: 64 } });
    }
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
  });
});

describe('request bodies are cut at their route cap while read (issue 10, item 6)', () => {
  /** POSTs a streamed body of `mib` MiB (1 MiB chunks) from the page; how many MiB the Service Worker pulled. */
  const streamBody = (path: string, key: string | null, mib: number, type = 'application/json') =>
    h.page.evaluate(
      async ({ path, key, mib, type }) => {
        let pulled = 0;
        const chunk = new Uint8Array(1 << 20).fill(0x20);
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (pulled >= mib) return controller.close();
            pulled++;
            controller.enqueue(chunk.slice());
          },
        });
        const init = {
          method: 'POST',
          headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), 'Content-Type': type },
          body,
          duplex: 'half',
        };
        const res = await fetch(path, init);
        return { status: res.status, json: await res.json(), pulled };
      },
      { path, key, mib, type },
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

  it('refuses a missing or bad key (401), a non-admin upload (403) and a JSON upload (415) before reading the body', async () => {
    const [none, bad, upload, json] = await Promise.all([
      streamBody('/v1/chat/completions', null, 512),
      streamBody('/v1/preview/models', 'sk-not-a-key', 512),
      streamBody('/v1/preview/base-models/files', hostile, 512, 'multipart/form-data; boundary=x'),
      streamBody('/v1/preview/base-models/files', h.key, 512),
    ]);
    expect(none.status).toBe(401);
    expect(none.json.error).toMatchObject({ code: 401 });
    expect(bad.status).toBe(401);
    expect(bad.json.detail).toBeTruthy();
    expect(upload.status).toBe(403);
    expect(upload.json.detail).toMatch(/needs the admin key/);
    expect(json.status).toBe(415);
    // Only what the browser's pipes pull ahead on their own, never the body up to its cap.
    for (const r of [none, bad, upload, json]) expect(r.pulled).toBeLessThan(8);
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
  });

  it('writes a base-model upload to storage while its body is still streaming in', async () => {
    const names = readdirSync(TINY_CHAT);
    // 24 MiB of extra.bin; after 16 MiB the body waits until storage holds 8 MiB of it.
    const out = await streamUpload(h.page, h.key, { names, extraMiB: 24, pauseAtMiB: 16, storedMiB: 8 });
    expect(out.status, JSON.stringify(out.json)).toBe(201);
    expect(out.json).toMatchObject({ status: 'cached', origin: { type: 'upload' } });
    expect(out.storedWhileSending).toBe(true);
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
    const removed = await api(h.page, 'DELETE', `/v1/preview/base-models/${encodeURIComponent(out.json.id)}`, { key: h.key });
    expect(removed.status).toBe(200);
  });
});

describe('bounded chat requests (issue 10, item 7)', () => {
  it('refuses too many stop strings, bad words or messages with vLLM 400s', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ stop: Array.from({ length: 100_000 }, (_, i) => `s${i}`) }, 'stop'],
      [{ bad_words: Array(300).fill('x') }, 'bad_words'],
      [{ messages: Array(3000).fill({ role: 'user', content: 'x' }) }, 'messages'],
    ];
    for (const [extra, param] of cases) {
      const out = await complete(h.page, hostile, { model: MODEL, messages: ASK, max_tokens: 4, ...extra });
      expect(out, param).toMatchObject({ ok: false, status: 400, name: 'BadRequestError', param });
      expect((out as { message: string }).message).toMatch(
        new RegExp(`'too_long', 'loc': \\('body', '${param}'\\), 'msg': 'List should have at most \\d+ items'`),
      );
    }
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
  });

  it('answers 429 past 32 chat requests in flight for one key, frees the slots when streams close, and serves others meanwhile', async () => {
    const opened = await h.page.evaluate(async (key) => {
      const body = JSON.stringify({
        model: 'hearth/tiny-chat',
        messages: [{ role: 'user', content: 'What is 3 + 4?' }],
        max_tokens: 1000,
        ignore_eos: true,
        stream: true,
      });
      const init = { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body };
      const held = await Promise.all(Array.from({ length: 32 }, () => fetch('/v1/chat/completions', init)));
      (globalThis as any).__held = held;
      const extra = await fetch('/v1/chat/completions', init);
      return {
        statuses: held.map((r) => r.status),
        extra: { status: extra.status, retryAfter: extra.headers.get('Retry-After'), json: await extra.json() },
      };
    }, hostile);
    try {
      expect(opened.statuses).toEqual(Array(32).fill(200));
      expect(opened.extra).toMatchObject({
        status: 429,
        retryAfter: '1',
        json: { error: { message: 'Concurrency limit reached for requests', code: 429 } },
      });
      expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
    } finally {
      await h.page.evaluate(async () => {
        for (const r of (globalThis as any).__held as Response[]) await r.body?.cancel();
      });
    }
    // Cancelled streams give their slots back: the key is served again.
    let again = await complete(h.page, hostile, { model: MODEL, messages: ASK, max_tokens: 2 });
    for (let i = 0; i < 50 && !again.ok; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await complete(h.page, hostile, { model: MODEL, messages: ASK, max_tokens: 2 });
    }
    expect(again.ok).toBe(true);
  });
});

describe('fair training queue (issue 10, item 7)', () => {
  const sftData = (n: number) =>
    'data:application/jsonl,' +
    encodeURIComponent(
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({
          messages: [
            { role: 'user', content: `What is ${i % 10} + 1?` },
            { role: 'assistant', content: String((i % 10) + 1) },
          ],
        }),
      ).join('\n'),
    );
  const register = async (key: string, name: string) =>
    (await api(h.page, 'POST', '/v1/preview/models', { key, body: { entity: null, project: 'e2e', name, base_model: MODEL } })).json
      .id as string;
  const job = async (id: string, key: string) => (await api(h.page, 'GET', `/v1/preview/training-jobs/${id}`, { key })).json;
  const rl = (key: string, modelId: string) =>
    api(h.page, 'POST', '/v1/preview/training-jobs', { key, body: { model_id: modelId, trajectory_groups: [{ trajectories: [] }] } });

  it('caps pending jobs per key (429) and serves keys round-robin, not first-come-first-served', { timeout: 600_000 }, async () => {
    const mine = await register(hostile, 'queue-hog');
    const theirs = await register(bystander, 'queue-fair');
    const long = await api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
      key: hostile,
      body: { model_id: mine, training_data_url: sftData(16), config: { batch_size: 2, learning_rate: 1e-4 } },
    });
    expect(long.status, long.text).toBe(200);
    for (let i = 0; i < 200 && (await job(long.json.id, hostile)).status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 100));
    // Engine status shows a running job's id to its owner only (item 12); others see that one runs.
    const seenByOwner = (await api(h.page, 'GET', '/v1/preview/engine', { key: hostile })).json.jobs;
    const seenByOther = (await api(h.page, 'GET', '/v1/preview/engine', { key: bystander })).json.jobs;
    expect(seenByOwner).toMatchObject({ running: long.json.id, training: true });
    expect(seenByOther).toMatchObject({ running: null, training: true });
    const feed = await h.page.evaluate(async (key) => {
      const res = await fetch('/v1/preview/engine/events', { headers: { Authorization: `Bearer ${key}` } });
      const reader = res.body!.getReader();
      const { value } = await reader.read();
      await reader.cancel();
      return new TextDecoder().decode(value);
    }, bystander);
    expect(feed).toContain('"training":true');
    expect(feed).not.toContain(long.json.id);
    const queued: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await rl(hostile, mine);
      expect(r.status, r.text).toBe(200);
      queued.push(r.json.id);
    }
    const refused = await rl(hostile, mine);
    expect(refused.status).toBe(429);
    expect(refused.json.detail).toMatch(/already has 8 training jobs pending/);
    const fair = await rl(bystander, theirs);
    expect(fair.status, fair.text).toBe(200);
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();

    const ended = async (id: string, key: string) => {
      for (let i = 0; i < 3000; i++) {
        const j = await job(id, key);
        if (j.status === 'COMPLETED' || j.status === 'FAILED') return j;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`job ${id} did not end`);
    };
    const fairJob = await ended(fair.json.id, bystander);
    const hogJobs = [];
    for (const id of queued) hogJobs.push(await ended(id, hostile));
    // The bystander's one job ran before every job the hostile key queued ahead of it.
    for (const j of hogJobs)
      expect(fairJob.training_start < j.training_start, `${fairJob.training_start} < ${j.training_start}`).toBe(true);
  });
});

describe('progress timeout in the Service Worker (issue 10)', () => {
  it('answers 504 for a request the engine leaves without progress, aborts it in the engine, and serves others meanwhile', async () => {
    const model = (
      await api(h.page, 'POST', '/v1/preview/models', {
        key: hostile,
        body: { entity: null, project: 'e2e', name: 'stall', base_model: MODEL },
      })
    ).json;
    // SFT data from a server that never answers: the engine waits on it with no progress.
    const stall = h.server.stall('/e2e-limits/never.jsonl');
    const stuck = api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
      key: hostile,
      body: { model_id: model.id, training_data_url: '/e2e-limits/never.jsonl' },
      headers: { 'X-Hearth-Progress-Timeout': '5' },
    });
    await stall.requested;
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
    const answer = await stuck;
    expect(answer.status).toBe(504);
    expect(answer.json.detail).toMatch(/no progress on this request for 5 s/);
    // The engine gave up its fetch (the connection closed), and created no job.
    await stall.closed;
    const jobs = await api(h.page, 'GET', `/v1/preview/training-jobs?model_id=${model.id}`, { key: hostile });
    expect(jobs.status).toBe(200);
    expect(jobs.json.data).toEqual([]);
  });
});

describe("base models are the owner's (issue 10, items 4 and 12)", () => {
  it('refuses adding, uploading, re-pointing and removing to other keys with 403; everyone lists and uses them', async () => {
    const encoded = encodeURIComponent(MODEL);
    const attempts = [
      await api(h.page, 'POST', '/v1/preview/base-models', {
        key: hostile,
        body: { source: { type: 'huggingface', repo: 'org/tiny-chat', base_url: 'http://127.0.0.1:9' } },
      }),
      await api(h.page, 'POST', '/v1/preview/base-models', {
        key: hostile,
        body: { source: { type: 'url', url: 'http://127.0.0.1:9/x' } },
      }),
      await api(h.page, 'POST', '/v1/preview/base-models/files', {
        key: hostile,
        rawBody: '--b\r\n',
        headers: { 'Content-Type': 'multipart/form-data; boundary=b' },
      }),
      await api(h.page, 'DELETE', `/v1/preview/base-models/${encoded}`, { key: hostile }),
    ];
    for (const r of attempts) {
      expect(r.status, r.text).toBe(403);
      expect(r.json.detail).toMatch(/needs the admin key/);
    }
    const listed = await api(h.page, 'GET', '/v1/preview/base-models', { key: hostile });
    expect(listed.status).toBe(200);
    expect(listed.json.data.find((m: { id: string }) => m.id === MODEL)).toMatchObject({ origin: { type: 'bundled' } });
    expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();
  });

  it('shows a URL download without its credentials to every key', async () => {
    const added = await api(h.page, 'POST', '/v1/preview/base-models', {
      key: h.key,
      body: { source: { type: 'url', url: 'http://user:s3cret@127.0.0.1:9/models/x?token=s3cret' } },
    });
    expect(added.status, added.text).toBe(202);
    expect(added.json.id).toBe('http://127.0.0.1:9/models/x/');
    expect(added.json.origin).toEqual({ type: 'url', url: 'http://127.0.0.1:9/models/x/' });
    const listed = await api(h.page, 'GET', '/v1/preview/base-models', { key: hostile });
    const status = await api(h.page, 'GET', '/v1/preview/engine', { key: hostile });
    expect(listed.text).toContain('http://127.0.0.1:9/models/x/');
    expect(listed.text).not.toContain('s3cret');
    expect(status.text).not.toContain('s3cret');
    expect((await api(h.page, 'DELETE', `/v1/preview/base-models/${encodeURIComponent(added.json.id)}`, { key: h.key })).status).toBe(200);
  });
});

describe("revoking a principal's last key, and deleting the principal (issue 10, item 8)", () => {
  it(
    'fails its queued and running jobs saying why, closes its open streams, and the admin deletes all it owns',
    { timeout: 600_000 },
    async () => {
      const created = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'doomed' } })).json;
      const doomed = created.key as string;
      const modelId = (
        await api(h.page, 'POST', '/v1/preview/models', {
          key: doomed,
          body: { entity: null, project: 'e2e', name: 'doomed', base_model: MODEL },
        })
      ).json.id;
      const lines = Array.from({ length: 16 }, (_, i) =>
        JSON.stringify({
          messages: [
            { role: 'user', content: `What is ${i % 10} + 2?` },
            { role: 'assistant', content: String((i % 10) + 2) },
          ],
        }),
      );
      const running = (
        await api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
          key: doomed,
          body: { model_id: modelId, training_data_url: `data:application/jsonl,${encodeURIComponent(lines.join('\n'))}` },
        })
      ).json.id;
      for (
        let i = 0;
        i < 600 && (await api(h.page, 'GET', `/v1/preview/training-jobs/${running}`, { key: doomed })).json.status === 'PENDING';
        i++
      )
        await new Promise((r) => setTimeout(r, 100));
      const queued = (
        await api(h.page, 'POST', '/v1/preview/training-jobs', {
          key: doomed,
          body: { model_id: modelId, trajectory_groups: [{ trajectories: [] }] },
        })
      ).json.id;
      // Two open streams: a long chat and the engine feed (which never ends by itself).
      await h.page.evaluate(async (key) => {
        const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
        const body = JSON.stringify({
          model: 'hearth/tiny-chat',
          messages: [{ role: 'user', content: 'What is 3 + 4?' }],
          max_tokens: 1000,
          ignore_eos: true,
          stream: true,
        });
        const read = async (res: Response) => {
          const reader = res.body!.getReader();
          let text = '';
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return { ended: 'closed', text };
              text += new TextDecoder().decode(value);
            }
          } catch (err) {
            return { ended: `error: ${String(err)}`, text };
          }
        };
        const chat = await fetch('/v1/chat/completions', { method: 'POST', headers, body });
        const feed = await fetch('/v1/preview/engine/events', { headers });
        (globalThis as any).__doomed = { chat: read(chat), feed: read(feed) };
      }, doomed);

      expect((await api(h.page, 'DELETE', `/v1/preview/api-keys/${created.id}`, { key: h.key })).status).toBe(200);
      const streams = await h.page.evaluate(async () => {
        const d = (globalThis as any).__doomed;
        return { chat: await d.chat, feed: await d.feed };
      });
      // Both streams ended; the chat before its 1000 tokens (no finish_reason "length").
      expect(streams.feed.ended).toBeTruthy();
      expect(streams.chat.text).not.toContain('"finish_reason":"length"');
      expect((await api(h.page, 'GET', '/v1/preview/models', { key: doomed })).status).toBe(401);

      const events = async () => (await dumpHearthDb(h.page)).jobEvents.filter((e) => e.jobId === running || e.jobId === queued);
      let failed: any[] = [];
      for (let i = 0; i < 600 && failed.length < 2; i++) {
        failed = (await events()).filter((e) => e.type === 'training_failed');
        if (failed.length < 2) await new Promise((r) => setTimeout(r, 100));
      }
      expect(failed.map((e) => String(e.jobId)).sort()).toEqual([String(running), String(queued)].sort());
      for (const e of failed) expect(e.data.error_message).toMatch(/"doomed" was revoked/);
      const jobs = (await dumpHearthDb(h.page)).trainingJobs.filter((j) => j.id === running || j.id === queued);
      expect(jobs.map((j) => j.status)).toEqual(['FAILED', 'FAILED']);
      expect((await bystanderChat()).choices[0].finish_reason).toBeTruthy();

      // The admin deletes the principal with everything it owns, in one cascade.
      const gone = await api(h.page, 'DELETE', `/v1/preview/api-keys/principals/${created.principal_id}`, { key: h.key });
      expect(gone.status, gone.text).toBe(200);
      expect(gone.json).toMatchObject({ object: 'principal', deleted: true, deleted_models: 1 });
      const db = await dumpHearthDb(h.page);
      for (const [store, records] of Object.entries(db)) {
        expect(
          records.filter((r) => r.principalId === created.principal_id || r.id === created.principal_id),
          store,
        ).toEqual([]);
      }
      expect(db.checkpointFiles.filter((f) => !db.checkpoints.some((c) => c.id === f.checkpointId))).toEqual([]);
      expect((await api(h.page, 'DELETE', `/v1/preview/api-keys/principals/${created.principal_id}`, { key: hostile })).status).toBe(403);
    },
  );
});
