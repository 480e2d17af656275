// Chat without WebGPU (issue 25): Chromium launched without WebGPU offers no adapter, so the engine
// serves chat completions on its CPU backend (llama.cpp in WebAssembly, wllama) behind the same /v1.
// - The app loads, the engine status names the CPU backend and what it refuses, and a page the
//   Service Worker serves is cross-origin isolated (COOP/COEP).
// - The bundled safetensors model (converted to GGUF in the tab) answers, streamed and not: every
//   token it picks is, by Hearth's plain-TS reference forward over the same prompt ids, the best or
//   within bf16 rounding of it, and its logprobs are the reference's.
// - A GGUF downloaded from a mirror (a split file of the same weights) answers with the same ids.
// - A training job is refused at creation (400 saying it needs WebGPU) and nothing is queued; beam
//   search and structured outputs answer 400 naming their field.
// - The chat playground shows the CPU badge and Settings the backend and its threads.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { SafetensorsFile } from '../../src/engine/model/files/safetensors';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { ReferenceModel } from '../../src/engine/reference/model';
import { ok, stream } from './chat-helpers';
import { splitGguf, tinyChatGguf } from './gguf-fixture';
import { api, loadOpenAI, openApp, startHearth, type Hearth } from './harness';
import { serveMirror, until, writeRangeHead, type MirrorServer } from './hf-mirror';
import { goTo } from './ui-helpers';

const DIR = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));
const REPO = 'org/tiny-chat-GGUF';
const PARTS = ['tiny-chat-BF16-00001-of-00002.gguf', 'tiny-chat-BF16-00002-of-00002.gguf'];
const GGUF_ID = `${REPO}/tiny-chat-BF16.gguf`;
const ASK = { messages: [{ role: 'user', content: 'What is 3 + 4?' }], max_tokens: 8, temperature: 0, return_token_ids: true };

let h: Hearth;
let mirror: MirrorServer;
const files = new Map<string, Buffer>();

async function referenceModel(): Promise<ReferenceModel> {
  const config = parseModelConfig(JSON.parse(readFileSync(DIR + 'config.json', 'utf8')));
  const st = await SafetensorsFile.open(new Uint8Array(readFileSync(DIR + 'model.safetensors')));
  const tensors: TensorData[] = [];
  for (const name of st.names) tensors.push(await st.read(name));
  return new ReferenceModel(config, tensors);
}

beforeAll(async () => {
  const [hearth, m, model] = await Promise.all([
    startHearth({ webgpu: false }),
    serveMirror((req, res) => {
      const p = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
      const bytes = p && files.get(`${p[1]}/${decodeURIComponent(p[2])}`);
      if (!bytes) return void res.writeHead(404).end('Entry not found');
      const { start, end } = writeRangeHead(req, res, bytes.length);
      res.end(bytes.subarray(start, end));
    }),
    tinyChatGguf(),
  ]);
  [h, mirror] = [hearth, m];
  splitGguf(model, [19]).forEach((part, i) => files.set(`${REPO}/${PARTS[i]}`, Buffer.from(part)));
  await loadOpenAI(h.page);
}, 120_000);
afterAll(async () => {
  await h?.close();
  await mirror?.close();
});

describe('without WebGPU', () => {
  it('loads the app, and the engine serves chat on the CPU backend', async () => {
    const status = await api(h.page, 'GET', '/v1/preview/engine', { key: h.key });
    expect(status.status).toBe(200);
    expect(status.json.gpu).toBeNull();
    expect(status.json.backend).toMatchObject({
      kind: 'cpu',
      description: expect.stringMatching(/llama\.cpp \(WebAssembly\), \d+ threads?/),
    });
    expect(status.json.backend.unsupported.map((u: { feature: string }) => u.feature)).toEqual(
      expect.arrayContaining(['training', 'use_beam_search', 'prompt_logprobs', 'structured_outputs', 'checkpoints']),
    );
    expect(status.json.backend.unsupported[0].reason).toMatch(/^needs WebGPU \(this engine runs on the CPU, no WebGPU adapter/);
    // The Service Worker serves the app shell with COOP/COEP: a page it controls is cross-origin
    // isolated (SharedArrayBuffer, so llama.cpp's threads), and the app still starts in it.
    const second = await openApp(h.context, h.server);
    expect(await second.evaluate(() => globalThis.crossOriginIsolated)).toBe(true);
    expect((await api(second, 'GET', '/v1/preview/engine', { key: h.key })).json.backend.kind).toBe('cpu');
    await second.close();
  });

  it('answers from the bundled model with the tokens and logprobs of Hearth reference forward, streamed the same', async () => {
    const done = await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK, logprobs: true, top_logprobs: 2 });
    const choice = done.choices[0];
    expect(choice.token_ids).toHaveLength(done.usage.completion_tokens);
    expect(choice.message.content.length).toBeGreaterThan(0);
    // Teacher-forced along the CPU's own tokens: each is the reference's best, or within bf16 rounding of it.
    const ref = (await referenceModel()).session();
    const V = ref.model.config.vocabSize;
    let logits = ref.append(done.prompt_token_ids);
    let row = logits.subarray(logits.length - V);
    choice.token_ids.forEach((id: number, i: number) => {
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
      expect(max - row[id], `token ${i} (${id}) against the reference's best`).toBeLessThan(0.05);
      expect(choice.logprobs.content[i].logprob).toBeCloseTo(row[id] - lse, 1);
      row = ref.append([id]);
    });

    // The bundled safetensors model was written to GGUF once and kept in the model file cache.
    const cached = await h.page.evaluate(
      () =>
        new Promise<{ modelId: string; file: string; complete: boolean }[]>((resolve, reject) => {
          const open = indexedDB.open('hearth-model-files');
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const all = open.result.transaction('files').objectStore('files').getAll();
            all.onsuccess = () => resolve(all.result);
          };
        }),
    );
    expect(cached.find((f) => f.modelId === 'hearth/tiny-chat#cpu-gguf')).toMatchObject({ file: 'model.gguf', complete: true });

    // The finish is the engine's, as on WebGPU: a stop_token_id ends the choice at that token,
    // min_tokens masks EOS until then, and n choices come back, each seeded seed + i.
    const stopAt = choice.token_ids[0];
    const stopped = await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK, stop_token_ids: [stopAt] });
    expect(stopped.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: stopAt, token_ids: [stopAt] });
    const min = await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK, min_tokens: 8 });
    expect(min.choices[0]).toMatchObject({ finish_reason: 'length' });
    expect(min.usage.completion_tokens).toBe(8);
    const two = await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK, n: 2, temperature: 1, seed: 3 });
    expect(two.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    const again = await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK, n: 2, temperature: 1, seed: 3 });
    expect(again.choices.map((c: { token_ids: number[] }) => c.token_ids)).toEqual(
      two.choices.map((c: { token_ids: number[] }) => c.token_ids),
    );

    // Past EOS (ignore_eos), so the answer is long enough to stream in several chunks.
    const long = { model: 'hearth/tiny-chat', ...ASK, ignore_eos: true };
    const streamed = await stream(h.page, h.key, long);
    expect(streamed.ok, streamed.error?.message).toBe(true);
    expect(streamed.chunks.filter((c) => c.choices[0]?.delta?.content).length).toBeGreaterThan(1);
    expect(streamed.texts[0]).toBe((await ok(h.page, h.key, long)).choices[0].message.content);
  }, 180_000);

  it('downloads a split GGUF and chats with it as with the original', async () => {
    const started = await api(h.page, 'POST', '/v1/preview/base-models', {
      key: h.key,
      body: { source: { type: 'huggingface', repo: REPO, file: PARTS[0], base_url: mirror.url } },
    });
    expect(started.status, started.text).toBe(202);
    await until(
      'the GGUF download',
      async () => {
        const list = await api(h.page, 'GET', '/v1/preview/base-models', { key: h.key });
        const e = (list.json.data as { id: string; status: string }[]).find((m) => m.id === GGUF_ID);
        return e?.status === 'cached';
      },
      async () => 'not cached',
    );
    const [gguf, original] = [
      await ok(h.page, h.key, { model: GGUF_ID, ...ASK }),
      await ok(h.page, h.key, { model: 'hearth/tiny-chat', ...ASK }),
    ];
    expect(gguf.prompt_token_ids).toEqual(original.prompt_token_ids);
    expect(gguf.choices[0].token_ids).toEqual(original.choices[0].token_ids);
  }, 180_000);

  it('refuses a training job at creation, and what else needs WebGPU, naming the field', async () => {
    const model = await api(h.page, 'POST', '/v1/preview/models', {
      key: h.key,
      body: { entity: null, project: 'cpu', name: 'm', base_model: 'hearth/tiny-chat', return_existing: true },
    });
    const job = await api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
      key: h.key,
      body: { model_id: model.json.id, training_data_url: '/data.jsonl', config: { batch_size: 1, learning_rate: 1e-4 } },
    });
    expect(job.status, job.text).toBe(400);
    expect(job.json.detail).toMatch(/^Training needs WebGPU \(this engine runs on the CPU/);
    const jobs = await api(h.page, 'GET', '/v1/preview/training-jobs', { key: h.key });
    expect(jobs.json.data).toEqual([]);

    const beams = await api(h.page, 'POST', '/v1/chat/completions', {
      key: h.key,
      body: { model: 'hearth/tiny-chat', ...ASK, n: 2, use_beam_search: true },
    });
    expect(beams.status).toBe(400);
    expect(beams.json.error).toMatchObject({ param: 'use_beam_search', message: expect.stringMatching(/^use_beam_search needs WebGPU/) });
    const json = await api(h.page, 'POST', '/v1/chat/completions', {
      key: h.key,
      body: { model: 'hearth/tiny-chat', ...ASK, response_format: { type: 'json_object' } },
    });
    expect(json.status).toBe(400);
    expect(json.json.error.message).toMatch(/needs WebGPU/);
  });

  it('shows the CPU badge in the chat playground, training disabled with the reason, and the backend in Settings', async () => {
    await goTo(h.page, 'Chat');
    await expect.poll(() => h.page.locator('hearth-chat-playground .backend-badge').textContent()).toMatch(/CPU/);
    // Training forms are disabled with the reason (a model is registered by the test before).
    await goTo(h.page, 'Training');
    await expect
      .poll(() => h.page.locator('hearth-training-forms [data-field="cannot-train"]').textContent())
      .toMatch(/^Training needs WebGPU/);
    expect(await h.page.locator('hearth-training-forms button[type="submit"]').first().isDisabled()).toBe(true);
    await goTo(h.page, 'Settings');
    const card = h.page.locator('hearth-backend-settings');
    await expect.poll(() => card.locator('[data-field="backend"]').textContent()).toMatch(/llama\.cpp \(WebAssembly\), \d+ threads?/);
    expect(await card.locator('[data-field="unsupported"]').innerText()).toMatch(/training needs WebGPU/);
    // The choice is stored for the next engine start.
    await card.locator('select').selectOption('cpu');
    await card.locator('[role="status"]').waitFor();
    expect((await api(h.page, 'GET', '/v1/preview/engine', { key: h.key })).json.backend_preference).toBe('cpu');
  });
});
