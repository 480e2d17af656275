// Crash-safe base-model upload across the two databases (issue 10, item 11), in the real browser:
// the tab hosting the engine closes (its worker dies) while an upload's files are in the
// model-file cache and its record is not yet written. The next engine sweeps the orphaned files
// at start, lists no half-added model, and serves a bystander principal's chat.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK, MODEL, ok } from './chat-helpers';
import { api, BLANK_PATH, loadOpenAI, openApp, startHearth, type Hearth } from './harness';
import { modelFileKeys } from './idb';
import { streamUpload } from './upload-stream';

const TINY_CHAT = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));

let h: Hearth;
let bystander: string;

beforeAll(async () => {
  h = await startHearth();
  bystander = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'bystander' } })).json.key;
});
afterAll(async () => {
  await h?.close();
});

describe('an engine killed between the two writes of an upload', () => {
  it('leaves no files behind once the next engine starts, and no half-added model', { timeout: 120_000 }, async () => {
    // The upload comes from a page that does not host the engine, so closing the host kills only the engine.
    const uploader = await h.context.newPage();
    await uploader.goto(h.server.url + BLANK_PATH);
    const upload = streamUpload(uploader, h.key, { names: readdirSync(TINY_CHAT), extraMiB: 24, pauseAtMiB: 16, storedMiB: 8, hold: true });
    await uploader.waitForFunction(() => (globalThis as { __uploadHeld?: boolean }).__uploadHeld === true, null, { timeout: 60_000 });
    // Files written, record not: the engine dies here.
    expect((await modelFileKeys(uploader)).filter((k) => k.startsWith('files:'))).toHaveLength(1);
    await h.page.close();
    const answer = await upload;
    expect(answer.status).not.toBe(201);

    const host = await openApp(h.context, h.server);
    await loadOpenAI(host);
    // The next engine's start-up sweep removes the orphaned files.
    let left = await modelFileKeys(host);
    for (let i = 0; i < 100 && left.some((k) => k.startsWith('files:')); i++) {
      await new Promise((r) => setTimeout(r, 100));
      left = await modelFileKeys(host);
    }
    expect(left.filter((k) => k.startsWith('files:'))).toEqual([]);
    const listed = (await api(host, 'GET', '/v1/preview/base-models', { key: h.key })).json.data as { id: string }[];
    expect(listed.map((m) => m.id).filter((id) => id.startsWith('local/'))).toEqual([]);
    const chat = await ok(host, bystander, { model: MODEL, messages: ASK, max_tokens: 4, temperature: 0 });
    expect(chat.choices[0].finish_reason).toBeTruthy();
  });
});
