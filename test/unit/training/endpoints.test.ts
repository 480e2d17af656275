// The training data and adapter endpoints through the real app and store (fake-indexeddb):
// artifact uploads that SFT jobs train from, checkpoint downloads as PEFT zips (step 0 too), and
// models registered from uploaded PEFT adapters, with the /v1/preview error rules.
import 'fake-indexeddb/auto';
import { readFileSync } from 'node:fs';
import { unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { readGguf, readGgufTensor } from '../../../src/engine/model/gguf/gguf-reader';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { memoryBytes } from '../../../src/engine/model/files/safetensors';
import { initLoraParameters, loraToTensors, planLora } from '../../../src/engine/train/lora-plan';
import { parseAdapterConfig, parseAdapterModel } from '../../../src/service/adapters/parse';
import { adapterFiles } from '../../../src/service/adapters/peft-files';
import { LoraTrainer } from '../../../src/service/training/lora-trainer';
import { ORIGIN, startEngine, type TestEngine } from '../api/engine-fixture';
import { ReferenceTrainingEngine, servedFor, tinyTrainModel } from './reference-engine';

const model = tinyTrainModel();
const tinyChat = parseModelConfig(
  JSON.parse(readFileSync(new URL('../../../public/models/tiny-chat/config.json', import.meta.url), 'utf8')),
);
const LORA = {
  rank: 8,
  alpha: 16,
  targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
  useRslora: false,
};

const engine = () =>
  startEngine({
    trainer: new LoraTrainer({ inference: async () => servedFor(model), training: async () => new ReferenceTrainingEngine(model) }),
  });

async function register(e: TestEngine, name = 'm') {
  return (
    await e.call('POST', '/v1/preview/models', {
      body: { entity: null, project: 'p', name, base_model: 'hearth/tiny-chat', return_existing: true },
    })
  ).json.id as string;
}

async function send(e: TestEngine, method: string, path: string, form?: FormData, key = e.adminKey) {
  const res = await e.app.request(`${ORIGIN}${path}`, { method, headers: { Authorization: `Bearer ${key}` }, body: form });
  const bytes = new Uint8Array(await res.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, bytes };
}

function form(fields: Record<string, string>, files: Record<string, string | Uint8Array>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  for (const [name, body] of Object.entries(files)) f.append('file', new File([body as BlobPart], name));
  return f;
}

const line = (q: string, a: string) =>
  JSON.stringify({
    messages: [
      { role: 'user', content: q },
      { role: 'assistant', content: a },
    ],
  });
const data = [line('1 + 1', '2'), line('2 + 2', '4'), line('3 + 3', '6')].join('\n');

describe('POST /v1/preview/artifacts', { timeout: 60_000 }, () => {
  it('stores train.jsonl for a model; its url trains an SFT job without copying the data', async () => {
    const e = await engine();
    const modelId = await register(e);
    const up = await send(e, 'POST', '/v1/preview/artifacts', form({ model_id: modelId }, { 'train.jsonl': data }));
    expect(up.status).toBe(200);
    expect(up.json).toMatchObject({
      object: 'artifact',
      model_id: modelId,
      name: 'train.jsonl',
      files: [{ name: 'train.jsonl', bytes: data.length }],
    });
    expect(up.json.url).toBe(`${ORIGIN}/v1/preview/artifacts/${up.json.id}`);
    expect((await send(e, 'GET', `/v1/preview/artifacts/${up.json.id}`)).json.id).toBe(up.json.id);

    const job = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: { model_id: modelId, training_data_url: up.json.url, config: { learning_rate: [1e-3, 1e-3] } },
    });
    expect(job.status).toBe(200);
    await e.runner.idle();
    const events = (await e.call('GET', `/v1/preview/training-jobs/${job.json.id}/events`)).json.data;
    expect(events.map((x: any) => x.type)).toEqual(['training_started', 'gradient_step', 'gradient_step', 'training_ended']);
    expect(await e.services.db.count('artifacts')).toBe(1);
    // A relative URL names the same artifact; a list of the wrong length is a 422.
    const bad = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: { model_id: modelId, training_data_url: `/v1/preview/artifacts/${up.json.id}`, config: { learning_rate: [1e-3] } },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].loc).toEqual(['body', 'config', 'learning_rate']);

    // Deleting the model deletes its artifacts.
    await e.call('DELETE', `/v1/preview/models/${modelId}`);
    expect((await send(e, 'GET', `/v1/preview/artifacts/${up.json.id}`)).status).toBe(404);
    await e.close();
  });

  it('accepts trajectories.jsonl with metadata.json and checks them', async () => {
    const e = await engine();
    const modelId = await register(e);
    const ok = await send(
      e,
      'POST',
      '/v1/preview/artifacts',
      form({ model_id: modelId }, { 'trajectories.jsonl': data, 'metadata.json': '{"format": "jsonl", "num_trajectories": 3}' }),
    );
    expect(ok.status).toBe(200);
    const cases: [Record<string, string>, string | RegExp][] = [
      [{ 'trajectories.jsonl': data, 'metadata.json': '{"num_trajectories": 5}' }, /num_trajectories is 5, but the data holds 3/],
      [{ 'a.jsonl': data, 'b.jsonl': data }, /one JSONL data file/],
      [{ 'metadata.json': '{}' }, /one JSONL data file/],
      [
        { 'train.jsonl': line('q', 'a') + '\n{"messages": [{"role": "user", "content": "q"}]}' },
        /train.jsonl: Training data line 2: the last message must be the assistant's/,
      ],
    ];
    for (const [files, message] of cases) {
      const r = await send(e, 'POST', '/v1/preview/artifacts', form({ model_id: modelId }, files));
      expect(r.status).toBe(422);
      expect(r.json.detail[0].loc).toEqual(['body', 'files']);
      expect(r.json.detail[0].msg).toMatch(message);
    }
    const missing = await send(e, 'POST', '/v1/preview/artifacts', form({}, { 'train.jsonl': data }));
    expect([missing.status, missing.json.detail[0].loc, missing.json.detail[0].type]).toEqual([422, ['body', 'model_id'], 'missing']);
    expect((await send(e, 'POST', '/v1/preview/artifacts', form({ model_id: crypto.randomUUID() }, { 'train.jsonl': data }))).status).toBe(
      404,
    );
    const json = await e.call('POST', '/v1/preview/artifacts', { body: { model_id: modelId } });
    expect(json.status).toBe(415);
    // An artifact of one model cannot train another.
    const other = await register(e, 'other');
    const job = await e.call('POST', '/v1/preview/sft-training-jobs', { body: { model_id: other, training_data_url: ok.json.url } });
    expect(job.status).toBe(422);
    expect(job.json.detail[0].msg).toMatch(/uploaded for model/);
    await e.close();
  });
});

describe('checkpoint adapters as PEFT zips', { timeout: 60_000 }, () => {
  it("downloads step 0 as the identity adapter of the base model's shapes", async () => {
    const e = await engine();
    const modelId = await register(e);
    const r = await send(e, 'GET', `/v1/preview/models/${modelId}/checkpoints/0/adapter`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/zip');
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="m-step0-adapter.zip"');
    const files = unzipSync(r.bytes);
    expect(Object.keys(files).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const config = JSON.parse(new TextDecoder().decode(files['adapter_config.json']));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 8,
      lora_alpha: 16,
      base_model_name_or_path: 'hearth/tiny-chat',
      bias: 'none',
    });
    expect(parseAdapterConfig(config).rank).toBe(8);
    const tensors = await parseAdapterModel(files['adapter_model.safetensors']);
    expect(tensors).toHaveLength(tinyChat.numLayers * 7 * 2);
    const down = tensors.find((t) => t.name === 'base_model.model.model.layers.3.mlp.down_proj.lora_A.weight')!;
    expect(down.shape).toEqual([8, tinyChat.intermediateSize]);
    expect(tensors.every((t) => t.data.every((b) => b === 0))).toBe(true);
    expect((await send(e, 'GET', `/v1/preview/models/${modelId}/checkpoints/4/adapter`)).status).toBe(404);
    const badStep = await send(e, 'GET', `/v1/preview/models/${modelId}/checkpoints/x/adapter`);
    expect([badStep.status, badStep.json.detail[0].loc]).toEqual([422, ['path', 'step']]);
    expect((await send(e, 'GET', `/v1/preview/models/${crypto.randomUUID()}/checkpoints/0/adapter`)).status).toBe(404);
    await e.close();
  });

  it('registers a model from an uploaded adapter (files or zip) whose step 1 is that adapter, and downloads it back', async () => {
    const e = await engine();
    const plan = planLora(tinyChat, LORA);
    const files = adapterFiles('hearth/tiny-chat', LORA, loraToTensors(plan, initLoraParameters(plan, 3)));
    const fields = { project: 'p', name: 'imported', base_model: 'hearth/tiny-chat' };
    const r = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form(fields, { 'adapter_config.json': files.adapterConfig, 'adapter_model.safetensors': files.adapterModel }),
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: 'model', project: 'p', name: 'imported', base_model: 'hearth/tiny-chat' });
    const steps = (await e.call('GET', `/v1/preview/models/${r.json.id}/checkpoints`)).json.data.map((c: any) => c.step);
    expect(steps).toEqual([0, 1]);
    const back = unzipSync((await send(e, 'GET', `/v1/preview/models/${r.json.id}/checkpoints/1/adapter`)).bytes);
    expect(back['adapter_model.safetensors']).toEqual(files.adapterModel);

    const zip = zipSync({ 'adapter_config.json': files.adapterConfig, 'adapter_model.safetensors': files.adapterModel });
    expect((await send(e, 'POST', '/v1/preview/models/import', form({ ...fields, name: 'zipped' }, { 'a.zip': zip }))).status).toBe(200);
    expect((await send(e, 'POST', '/v1/preview/models/import', form(fields, { 'a.zip': zip }))).status).toBe(409);

    // An adapter for other shapes, an unknown base model, missing files and fields are 422s.
    const small = planLora(model.config, LORA);
    const wrong = adapterFiles('x', LORA, loraToTensors(small, initLoraParameters(small, 1)));
    const mismatch = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form({ ...fields, name: 'w' }, { 'adapter_config.json': wrong.adapterConfig, 'adapter_model.safetensors': wrong.adapterModel }),
    );
    expect([mismatch.status, mismatch.json.detail[0].loc]).toEqual([422, ['body', 'files']]);
    expect(mismatch.json.detail[0].msg).toMatch(/does not fit hearth\/tiny-chat: .*shape/);
    const unknown = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form({ ...fields, name: 'u', base_model: 'nope' }, { 'a.zip': zip }),
    );
    expect(unknown.json.detail[0].loc).toEqual(['body', 'base_model']);
    const noFiles = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form({ ...fields, name: 'n' }, { 'adapter_config.json': files.adapterConfig }),
    );
    expect(noFiles.json.detail[0].msg).toMatch(/adapter_model.safetensors/);
    const noName = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form({ project: 'p', base_model: 'hearth/tiny-chat' }, { 'a.zip': zip }),
    );
    expect([noName.status, noName.json.detail[0].loc, noName.json.detail[0].type]).toEqual([422, ['body', 'name'], 'missing']);
    await e.close();
  });

  it('downloads a checkpoint as a GGUF LoRA adapter for llama.cpp, and refuses an unknown format', async () => {
    const e = await engine();
    const plan = planLora(tinyChat, LORA);
    const tensors = loraToTensors(plan, initLoraParameters(plan, 5));
    const files = adapterFiles('hearth/tiny-chat', LORA, tensors);
    const fields = { project: 'p', name: 'g', base_model: 'hearth/tiny-chat' };
    const imported = await send(
      e,
      'POST',
      '/v1/preview/models/import',
      form(fields, { 'adapter_config.json': files.adapterConfig, 'adapter_model.safetensors': files.adapterModel }),
    );
    const r = await send(e, 'GET', `/v1/preview/models/${imported.json.id}/checkpoints/1/adapter?format=gguf`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="g-step1-adapter.gguf"');
    expect(new TextDecoder().decode(r.bytes.subarray(0, 4))).toBe('GGUF');
    const gguf = await readGguf(memoryBytes(r.bytes), 'adapter.gguf');
    const meta = (k: string) => gguf.metadata.get(k)?.value;
    expect([meta('general.type'), meta('adapter.type'), meta('general.architecture'), meta('adapter.lora.alpha')]).toEqual([
      'adapter',
      'lora',
      'llama',
      16,
    ]);
    expect(gguf.tensors).toHaveLength(tinyChat.numLayers * 7 * 2);
    // PEFT's A [r, in] is llama.cpp's lora_a (ne [in, r]) byte for byte.
    const a = gguf.tensors.find((t) => t.name === 'blk.2.ffn_down.weight.lora_a')!;
    expect(a.ne).toEqual([tinyChat.intermediateSize, 8]);
    const peftA = tensors.find((t) => t.name === 'base_model.model.model.layers.2.mlp.down_proj.lora_A.weight')!;
    expect(await readGgufTensor(memoryBytes(r.bytes), a)).toEqual(peftA.data);

    // Step 0 (the identity adapter) exports too; an unknown step is a 404, an unknown format a 422.
    const model = await register(e);
    expect((await send(e, 'GET', `/v1/preview/models/${model}/checkpoints/0/adapter?format=gguf`)).status).toBe(200);
    expect((await send(e, 'GET', `/v1/preview/models/${model}/checkpoints/3/adapter?format=gguf`)).status).toBe(404);
    const bad = await send(e, 'GET', `/v1/preview/models/${model}/checkpoints/0/adapter?format=ggml`);
    expect([bad.status, bad.json.detail[0].loc]).toEqual([422, ['query', 'format']]);
    await e.close();
  });
});
