// GGUF downloads through the real app, services and store (fake-indexeddb) before the weights
// load: the header is read with a range request and a file Hearth cannot run (an unknown
// architecture, a missing key, an unsupported tensor type, a wrong split count, no such file) is
// a 422 naming it with nothing kept; a file it can run starts downloading after the bytes the
// check read. The Hugging Face token is write-only and goes only to the configured mirror.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGguf, type GgufMetadataEntry } from '../../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { MemoryFileCache } from '../../../src/engine/model/sources/file-cache';
import { splitGguf, tinyChatGguf } from '../../e2e/gguf-fixture';
import { tinyLlamaKeys } from '../model/gguf-vocab-fixtures';
import { ORIGIN, startEngine, staticFetch, type TestEngine } from './engine-fixture';

const MIRROR = 'http://mirror.test';
const OTHER = 'http://files.test';

interface Seen {
  url: string;
  range: string | null;
  authorization: string | null;
}

/** Serves `files` (path -> bytes) on MIRROR and OTHER with byte ranges, recording each request. */
function serving(files: Map<string, Uint8Array>, seen: Seen[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (url.origin !== MIRROR && url.origin !== OTHER) return staticFetch(input, init);
    const headers = new Headers(init?.headers);
    seen.push({ url: url.href, range: headers.get('Range'), authorization: headers.get('Authorization') });
    const bytes = files.get(decodeURIComponent(url.pathname));
    if (!bytes) return new Response('Entry not found', { status: 404 });
    const r = /^bytes=(\d+)-(\d*)$/.exec(headers.get('Range') ?? '');
    if (!r) return new Response(bytes as BodyInit, { headers: { ETag: '"v1"', 'Content-Length': String(bytes.length) } });
    const start = Number(r[1]);
    const end = r[2] ? Math.min(Number(r[2]) + 1, bytes.length) : bytes.length;
    return new Response(bytes.subarray(start, end) as BodyInit, {
      status: 206,
      headers: { ETag: '"v1"', 'Content-Range': `bytes ${start}-${end - 1}/${bytes.length}`, 'Content-Length': String(end - start) },
    });
  };
}

const LLAMA: Array<[string, GgufMetadataEntry]> = [...tinyLlamaKeys(8), ['general.file_type', gv.u32(7)]];
const EMBED: GgufTensorInput = { name: 'token_embd.weight', ne: [64, 8], type: 'F32', data: new Uint8Array(64 * 8 * 4) };

function gguf(metadata: Array<[string, GgufMetadataEntry]>, tensors: GgufTensorInput[] = [EMBED]): Uint8Array {
  // Weights after the header make the file larger than one probe request.
  return writeGguf({ metadata, tensors: [...tensors, { name: 'pad.weight', ne: [1 << 19], type: 'F32', data: new Uint8Array(1 << 21) }] });
}

const files = new Map<string, Uint8Array>([
  ['/org/repo/resolve/main/gpt2-F32.gguf', gguf([['general.architecture', gv.str('gpt2')]])],
  ['/org/repo/resolve/main/no-width.gguf', gguf(LLAMA.filter(([k]) => k !== 'llama.embedding_length'))],
  [
    '/org/repo/resolve/main/iq2.gguf',
    gguf(LLAMA, [EMBED, { name: 'blk.0.ffn_down.weight', ne: [256], type: 'IQ2_XXS', data: new Uint8Array(66) }]),
  ],
  ['/org/repo/resolve/main/m-00001-of-00003.gguf', gguf([...LLAMA, ['split.count', gv.u32(2)]])],
  ['/org/repo/resolve/main/m-Q8_0.gguf', gguf(LLAMA)],
  ['/models/m-Q8_0.gguf', gguf(LLAMA)],
]);
const seen: Seen[] = [];
let e: TestEngine;
let cache: MemoryFileCache;
/** The bundled model as a BF16 GGUF in two parts. */
let tinyParts: Uint8Array[];
beforeAll(async () => {
  tinyParts = splitGguf(await tinyChatGguf(), [19]);
  files.set('/org/tiny/resolve/main/tiny-BF16-00001-of-00002.gguf', tinyParts[0]);
  files.set('/org/tiny/resolve/main/tiny-BF16-00002-of-00002.gguf', tinyParts[1]);
  cache = new MemoryFileCache();
  e = await startEngine({ fetch: serving(files, seen), modelFiles: cache });
});
afterAll(() => e.close());

const download = (source: Record<string, unknown>, key?: string | null) =>
  e.call('POST', '/v1/preview/base-models', { body: { source }, key });
const hub = (file: string) => ({ type: 'huggingface', repo: 'org/repo', file, base_url: MIRROR });

describe('POST /v1/preview/base-models with a GGUF file', () => {
  it.each([
    ['gpt2-F32.gguf', /architecture gpt2 is not supported/],
    ['no-width.gguf', /metadata key llama\.embedding_length is missing/],
    ['iq2.gguf', /tensor blk\.0\.ffn_down\.weight has type IQ2_XXS/],
    ['m-00002-of-00003.gguf', /split\.count 2, but its name says 3 parts/],
    ['absent-Q4_K_M.gguf', /absent-Q4_K_M\.gguf was not found/],
  ])('refuses %s after reading its header, naming what is wrong, and keeps nothing', async (file, why) => {
    seen.length = 0;
    const res = await download(hub(file));
    expect(res.status, JSON.stringify(res.json)).toBe(422);
    expect(res.json.detail[0].loc).toEqual(['body', 'source', 'file']);
    expect(res.json.detail[0].msg).toMatch(why);
    expect(seen.map((s) => s.range)).toEqual(['bytes=0-1048575']);
    expect((await e.call('GET', '/v1/preview/base-models')).json.data.map((m: { id: string }) => m.id)).not.toContain(`org/repo/${file}`);
    expect(await cache.listModels()).toEqual([]);
  });

  it('refuses a file name outside the repository or not a .gguf', async () => {
    for (const file of ['../x.gguf', 'model.safetensors']) {
      const res = await download(hub(file));
      expect(res.status).toBe(422);
      expect(res.json.detail[0].loc).toEqual(['body', 'source', 'file']);
    }
  });

  it('starts a GGUF it can run as its own model, continuing after the bytes the header check read', async () => {
    seen.length = 0;
    const res = await download(hub('m-Q8_0.gguf'));
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    expect(res.json).toMatchObject({ id: 'org/repo/m-Q8_0.gguf', format: 'gguf', quantization: 'Q8_0', architecture: 'llama' });
    expect(res.json.origin).toMatchObject({ type: 'huggingface', repo: 'org/repo', mirror: `${MIRROR}/`, file: 'm-Q8_0.gguf' });
    await e.services.baseModels!.idle();
    expect(seen.map((s) => s.range)).toEqual(['bytes=0-1048575', 'bytes=1048576-']);
    await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('org/repo/m-Q8_0.gguf')}`);
  });

  it('downloads every part of a split GGUF and adds it to the catalogue once the loader accepts it', async () => {
    const res = await download({ type: 'huggingface', repo: 'org/tiny', file: 'tiny-BF16-00002-of-00002.gguf', base_url: MIRROR });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    expect(res.json.id).toBe('org/tiny/tiny-BF16.gguf');
    await e.services.baseModels!.idle();
    const done = (await e.call('GET', `/v1/preview/base-models/${encodeURIComponent('org/tiny/tiny-BF16.gguf')}`)).json;
    expect(done).toMatchObject({ status: 'cached', format: 'gguf', quantization: 'BF16', architecture: 'llama', max_model_len: 2048 });
    expect(done.parameters).toBe(4196608);
    expect(done.gpu_bytes).toBe(done.bytes);
    expect((await e.call('GET', '/v1/models')).json.data.map((m: { id: string }) => m.id)).toContain('org/tiny/tiny-BF16.gguf');
  });

  it("exports a LoRA on a downloaded GGUF as a GGUF adapter, its shapes from the GGUF's metadata", async () => {
    const model = await e.call('POST', '/v1/preview/models', {
      body: { entity: null, project: 'p', name: 'on-gguf', base_model: 'org/tiny/tiny-BF16.gguf' },
    });
    expect(model.status, JSON.stringify(model.json)).toBe(200);
    const res = await e.app.request(`${ORIGIN}/v1/preview/models/${model.json.id}/checkpoints/0/adapter?format=gguf`, {
      headers: { Authorization: `Bearer ${e.adminKey}` },
    });
    expect(res.status).toBe(200);
    const adapter = await readGguf(memoryBytes(new Uint8Array(await res.arrayBuffer())), 'adapter.gguf');
    expect(adapter.metadata.get('general.architecture')?.value).toBe('llama');
    const base = await readGguf(memoryBytes(tinyParts[1]), 'part 2');
    const down = base.tensors.find((t) => t.name === 'blk.3.ffn_down.weight')!;
    expect(adapter.tensors.find((t) => t.name === 'blk.3.ffn_down.weight.lora_a')!.ne[0]).toBe(down.ne[0]);
  });

  it('takes a URL ending in .gguf as one GGUF file, named by the URL', async () => {
    const res = await download({ type: 'url', url: `${OTHER}/models/m-Q8_0.gguf?download=true` });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    expect(res.json).toMatchObject({ id: `${OTHER}/models/m-Q8_0.gguf`, format: 'gguf', origin: { type: 'url' } });
    await e.services.baseModels!.idle();
    await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent(`${OTHER}/models/m-Q8_0.gguf`)}`);
  });
});

describe('picked .gguf files', () => {
  async function upload(picked: [string, Uint8Array][]) {
    const form = new FormData();
    for (const [name, bytes] of picked) form.append('files', new File([bytes as BlobPart], name));
    const res = await e.app.request(`${ORIGIN}/v1/preview/base-models/files`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${e.adminKey}` },
      body: form,
    });
    return { status: res.status, json: await res.json() };
  }
  const part = files.get('/org/repo/resolve/main/m-00001-of-00003.gguf')!;

  it('add every part of a split GGUF as one model named after the file', async () => {
    const added = await upload([
      ['tiny-BF16-00002-of-00002.gguf', tinyParts[1]],
      ['tiny-BF16-00001-of-00002.gguf', tinyParts[0]],
    ]);
    expect(added.status, JSON.stringify(added.json)).toBe(201);
    expect(added.json).toMatchObject({ id: 'local/tiny-BF16', source: 'files', format: 'gguf', quantization: 'BF16', parameters: 4196608 });
    await e.call('DELETE', `/v1/preview/base-models/${encodeURIComponent('local/tiny-BF16')}`);
  });

  it('are refused from the header, before anything is stored, naming the problem', async () => {
    const gpt2 = await upload([['gpt2-F32.gguf', files.get('/org/repo/resolve/main/gpt2-F32.gguf')!]]);
    expect(gpt2.status).toBe(422);
    expect(gpt2.json.detail[0].msg).toMatch(/architecture gpt2 is not supported/);
    const incomplete = await upload([
      ['m-00001-of-00003.gguf', part],
      ['m-00003-of-00003.gguf', part],
    ]);
    expect(incomplete.status).toBe(422);
    expect(incomplete.json.detail[0].msg).toMatch(/also needs m-00002-of-00003\.gguf/);
    const two = await upload([
      ['a.gguf', part],
      ['b.gguf', part],
    ]);
    expect(two.json.detail[0].msg).toMatch(/one GGUF model at a time/);
    expect((await cache.listModels()).filter((m) => m.modelId.startsWith('files:'))).toEqual([]);
  });
});

describe('the Hugging Face token', () => {
  it('is write-only, for the admin key, and never echoed', async () => {
    const set = await e.call('PATCH', '/v1/preview/settings', { body: { huggingface_token: 'hf_secret', huggingface_mirror: MIRROR } });
    expect(set.status).toBe(200);
    expect(set.json).toEqual({ object: 'settings', huggingface: { token_set: true, mirror: MIRROR } });
    const read = await e.call('GET', '/v1/preview/settings');
    expect(JSON.stringify(read.json)).not.toContain('hf_secret');
    const bad = await e.call('PATCH', '/v1/preview/settings', { body: { huggingface_token: 'hf_secret with space' } });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.json)).not.toContain('hf_secret');
    const user = await e.call('POST', '/v1/preview/api-keys', { body: { name: 'user' } });
    const refused = await e.call('PATCH', '/v1/preview/settings', { key: user.json.key, body: { huggingface_token: null } });
    expect(refused.status).toBe(403);
    expect((await e.call('GET', '/v1/preview/settings')).json.huggingface.token_set).toBe(true);
  });

  it('goes to the configured mirror (the default for repo ids) and not to other servers', async () => {
    seen.length = 0;
    const fromMirror = await download({ type: 'huggingface', repo: 'org/repo', file: 'm-Q8_0.gguf' });
    expect(fromMirror.status, JSON.stringify(fromMirror.json)).toBe(202);
    const elsewhere = await download({ type: 'url', url: `${OTHER}/models/m-Q8_0.gguf` });
    expect(elsewhere.status, JSON.stringify(elsewhere.json)).toBe(202);
    await e.services.baseModels!.idle();
    const mirrored = seen.filter((s) => s.url.startsWith(MIRROR));
    expect(mirrored.length).toBeGreaterThan(0);
    for (const s of mirrored) expect(s.authorization).toBe('Bearer hf_secret');
    for (const s of seen.filter((x) => x.url.startsWith(OTHER))) expect(s.authorization).toBeNull();
    const removed = await e.call('PATCH', '/v1/preview/settings', { body: { huggingface_token: null } });
    expect(removed.json.huggingface.token_set).toBe(false);
  });
});
