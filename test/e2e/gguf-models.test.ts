// GGUF base models in the browser (issue 11): the bundled model converted to a split BF16 GGUF and
// served by a Hugging Face mirror (another origin, byte ranges, ETag). POSTing its first part reads
// the header with a range request before anything downloads, the engine worker downloads both parts
// into IndexedDB (the second part's connection drops once and resumes from the stored bytes), and
// the model then answers chat completions as the safetensors original does. A GGUF of an
// architecture Hearth does not run is a 422 naming it, after the header alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGguf } from '../../src/engine/model/gguf/gguf-writer';
import { splitGguf, tinyChatGguf } from './gguf-fixture';
import { api, startHearth, type Hearth } from './harness';
import { serveMirror, until as waitFor, writeRangeHead, type MirrorServer } from './hf-mirror';

const REPO = 'org/tiny-chat-GGUF';
const PART1 = 'tiny-chat-BF16-00001-of-00002.gguf';
const PART2 = 'tiny-chat-BF16-00002-of-00002.gguf';
const ID = `${REPO}/tiny-chat-BF16.gguf`;
const DROP_AT = 1 << 20;

interface Mirror extends MirrorServer {
  files: Map<string, Buffer>;
  /** Files whose next whole-file answer stops after DROP_AT bytes (then the connection closes). */
  dropOnce: Set<string>;
  requests: { file: string; range: string | null; bytes: number }[];
}

async function startMirror(): Promise<Mirror> {
  const files = new Map<string, Buffer>();
  const dropOnce = new Set<string>();
  const requests: Mirror['requests'] = [];
  const server = await serveMirror((req, res) => {
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const bytes = m && files.get(`${m[1]}/${decodeURIComponent(m[2])}`);
    if (!m || !bytes) return void res.writeHead(404).end('Entry not found');
    const file = decodeURIComponent(m[2]);
    const range = req.headers.range ?? null;
    const { start, end } = writeRangeHead(req, res, bytes.length);
    requests.push({ file, range, bytes: end - start });
    // The connection closes a moment after the bytes are written, so some of them reach the page
    // first even on a loaded machine (once, with an immediate close, none had and the retry was a
    // whole-file request).
    if (!range && dropOnce.delete(file)) res.write(bytes.subarray(start, DROP_AT), () => setTimeout(() => res.destroy(), 250));
    else res.end(bytes.subarray(start, end));
  });
  return { ...server, files, dropOnce, requests };
}

let h: Hearth;
let mirror: Mirror;
beforeAll(async () => {
  const [hearth, m, model, other] = await Promise.all([startHearth(), startMirror(), tinyChatGguf(), tinyChatGguf('gpt2')]);
  [h, mirror] = [hearth, m];
  const [first, second] = splitGguf(model, [19]);
  mirror.files.set(`${REPO}/${PART1}`, Buffer.from(first));
  mirror.files.set(`${REPO}/${PART2}`, Buffer.from(second));
  mirror.files.set(`${REPO}/tiny-gpt2-BF16.gguf`, Buffer.from(writeGguf(other)));
});
afterAll(async () => {
  await h?.close();
  await mirror?.close();
});

const entry = async (id: string) =>
  ((await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key })).json.data as any[]).find((m) => m.id === id);

const until = <T>(what: string, probe: () => Promise<T | undefined | false>) =>
  waitFor(what, probe, async () => `${JSON.stringify(await entry(ID))}, mirror saw ${JSON.stringify(mirror.requests)}`);

const chat = (model: string) =>
  api(h.page, 'POST', '/v1/chat/completions', {
    key: h.key,
    body: { model, messages: [{ role: 'user', content: 'What is 2 + 3?' }], max_tokens: 6, temperature: 0, ignore_eos: true },
  });

describe('a GGUF from a Hugging Face mirror', () => {
  it('downloads a split file after checking its header, resumes a dropped part, and chats like the original', async () => {
    mirror.dropOnce.add(PART2);
    const started = await api(h.page, 'POST', '/v1/preview/base-models', {
      key: h.key,
      body: { source: { type: 'huggingface', repo: REPO, file: PART1, base_url: mirror.url } },
    });
    expect(started.status, started.text).toBe(202);
    expect(started.json).toMatchObject({ id: ID, format: 'gguf', quantization: 'BF16', architecture: 'llama', status: 'downloading' });
    expect(started.json.origin).toMatchObject({ type: 'huggingface', repo: REPO, file: PART1 });

    const done = await until('the download to finish', async () => {
      const e = await entry(ID);
      if (e?.status === 'error') throw new Error(e.download.error);
      return e?.status === 'cached' && e;
    });
    expect(done).toMatchObject({ format: 'gguf', quantization: 'BF16', architecture: 'llama', download: null });
    expect(done.gpu_bytes).toBe(done.bytes);

    // The header was read with a bounded range; the download went on after those bytes.
    const first = mirror.requests.filter((r) => r.file === PART1);
    expect(first[0].range).toMatch(/^bytes=0-\d+$/);
    expect(first.slice(1).map((r) => r.range)).toEqual([`bytes=${first[0].bytes}-`]);
    // The second part's connection dropped after DROP_AT bytes; the retry asked for the rest only.
    const second = mirror.requests.filter((r) => r.file === PART2);
    expect(second[0].range).toBeNull();
    // (what had arrived when the connection closed: the server wrote DROP_AT bytes, fewer may land).
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(second.at(-1)!.range ?? '')?.[1]);
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThanOrEqual(DROP_AT);

    const [gguf, original] = [await chat(ID), await chat('hearth/tiny-chat')];
    expect(gguf.status, gguf.text).toBe(200);
    expect(original.status, original.text).toBe(200);
    expect(gguf.json.usage).toEqual(original.json.usage);
    expect(gguf.json.choices[0].message.content).toBe(original.json.choices[0].message.content);
    expect((await entry(ID)).gpu_bytes).toBeGreaterThan(done.bytes);
  });

  it('refuses a GGUF of an unsupported architecture with a 422 after its header, keeping nothing', async () => {
    const res = await api(h.page, 'POST', '/v1/preview/base-models', {
      key: h.key,
      body: { source: { type: 'huggingface', repo: REPO, file: 'tiny-gpt2-BF16.gguf', base_url: mirror.url } },
    });
    expect(res.status, res.text).toBe(422);
    expect(res.json.detail[0].loc).toEqual(['body', 'source', 'file']);
    expect(res.json.detail[0].msg).toMatch(/architecture gpt2 is not supported/);
    const asked = mirror.requests.filter((r) => r.file === 'tiny-gpt2-BF16.gguf');
    expect(asked.map((r) => r.range)).toEqual(['bytes=0-1048575']);
    expect(await entry(`${REPO}/tiny-gpt2-BF16.gguf`)).toBeUndefined();
  });
});
