// Every /v1/preview endpoint for real: page fetch -> Service Worker -> engine worker -> IndexedDB.
// Auth and isolation between principals, 422 bodies, pagination, trajectory logs, training jobs
// (and that they survive a reload), cascade delete with no orphaned record, and clients written
// for the hosted service (the openai SDK, used the way ART's Stainless client is).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, loadOpenAI, startHearth, type Hearth } from './harness';
import { dumpHearthDb, seedHearthDb } from './idb';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

const register = (name: string, key = h.key, extra: Record<string, unknown> = {}) =>
  api(h.page, 'POST', '/v1/preview/models', {
    key,
    body: { entity: null, project: 'e2e', name, base_model: 'hearth/tiny-chat', return_existing: true, ...extra },
  });

async function waitForJob(id: string, key = h.key, polls = 100): Promise<any> {
  for (let i = 0; i < polls; i++) {
    const job = await api(h.page, 'GET', `/v1/preview/training-jobs/${id}`, { key });
    if (job.json.status === 'COMPLETED' || job.json.status === 'FAILED') return job.json;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${id} did not finish`);
}

describe('auth', () => {
  it('answers 401 without a key or with a wrong one', async () => {
    const none = await api(h.page, 'GET', '/v1/preview/models', { key: null });
    expect(none.status).toBe(401);
    expect(none.json.detail).toMatch(/Authorization/);
    expect((await api(h.page, 'GET', '/v1/preview/models', { key: 'hth_wrong' })).status).toBe(401);
  });

  it('creates, lists (without secrets) and revokes API keys, admin only', async () => {
    const created = await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'e2e-user' } });
    expect(created.status).toBe(200);
    const list = await api(h.page, 'GET', '/v1/preview/api-keys', { key: h.key });
    expect(list.json.data.some((k: { id: string }) => k.id === created.json.id)).toBe(true);
    expect(list.text).not.toContain(created.json.key);
    expect(list.text).not.toContain(h.key);
    expect((await api(h.page, 'GET', '/v1/preview/api-keys', { key: created.json.key })).status).toBe(403);
    expect((await api(h.page, 'DELETE', `/v1/preview/api-keys/${created.json.id}`, { key: h.key })).status).toBe(200);
    expect((await api(h.page, 'GET', '/v1/preview/models', { key: created.json.key })).status).toBe(401);
  });

  it('isolates principals: 404 for what another principal owns, exactly as for unknown ids', async () => {
    const other = (await api(h.page, 'POST', '/v1/preview/api-keys', { key: h.key, body: { name: 'intruder' } })).json.key;
    const model = (await register('isolated')).json;
    const job = (
      await api(h.page, 'POST', '/v1/preview/training-jobs', {
        key: h.key,
        body: { model_id: model.id, trajectory_groups: [{ trajectories: [] }] },
      })
    ).json;
    const missing = crypto.randomUUID();
    for (const [method, path, body] of [
      ['GET', `/v1/preview/models/${model.id}`],
      ['GET', `/v1/preview/models/${model.id}/checkpoints`],
      ['DELETE', `/v1/preview/models/${model.id}/checkpoints`, { steps: [0] }],
      ['POST', `/v1/preview/models/${model.id}/log`, { split: 'val', trajectory_groups: [] }],
      ['DELETE', `/v1/preview/models/${model.id}`],
      ['GET', `/v1/preview/training-jobs/${job.id}`],
      ['GET', `/v1/preview/training-jobs/${job.id}/events`],
    ] as [string, string, unknown?][]) {
      const theirs = await api(h.page, method, path, { key: other, body });
      const unknown = await api(h.page, method, path.replace(model.id, missing).replace(job.id, missing), { key: other, body });
      expect(theirs.status, `${method} ${path}`).toBe(404);
      expect(unknown.status).toBe(404);
    }
    expect((await api(h.page, 'GET', `/v1/preview/models/${model.id}`, { key: h.key })).status).toBe(200);
  });
});

describe('models and checkpoints', () => {
  it('registers like ART: idempotent with return_existing, step 0 listed at once', async () => {
    const a = await register('art-model');
    expect(a.json).toMatchObject({ entity: 'local', project: 'e2e', name: 'art-model', base_model: 'hearth/tiny-chat' });
    expect(a.json.run_id).toBeTruthy();
    expect((await register('art-model')).json.id).toBe(a.json.id);
    const latest = await api(h.page, 'GET', `/v1/preview/models/${a.json.id}/checkpoints?limit=1&order=desc`, { key: h.key });
    expect(latest.json).toMatchObject({ object: 'list', has_more: false, data: [{ step: 0, metrics: {} }] });
  });

  it('answers 422 listing the available base models for an unknown one', async () => {
    const res = await register('bad-base', h.key, { base_model: 'nobody/nothing' });
    expect(res.status).toBe(422);
    expect(res.json.detail[0].loc).toEqual(['body', 'base_model']);
    for (const id of ['hearth/tiny-chat', 'hearth/tiny-qwen2', 'hearth/tiny-qwen3']) expect(res.json.detail[0].msg).toContain(id);
  });

  it('pages checkpoints both ways and deletes chosen steps with their files', async () => {
    const model = (await register('paged')).json;
    const principalId = (await dumpHearthDb(h.page)).models.find((m) => m.id === model.id).principalId;
    // No endpoint creates trained checkpoints before the trainer exists: seed them as it will.
    const seeds = [];
    for (let step = 1; step <= 4; step++) {
      const id = crypto.randomUUID();
      seeds.push({
        store: 'checkpoints',
        value: {
          id,
          modelId: model.id,
          principalId,
          step,
          metrics: {},
          files: ['adapter_config.json', 'adapter_model.safetensors'],
          createdAt: Date.now(),
        },
      });
      seeds.push({ store: 'checkpointFiles', value: { checkpointId: id, name: 'adapter_config.json' }, bytes: 16 });
      seeds.push({ store: 'checkpointFiles', value: { checkpointId: id, name: 'adapter_model.safetensors' }, bytes: 4096 });
    }
    await seedHearthDb(h.page, seeds);

    const page1 = await api(h.page, 'GET', `/v1/preview/models/${model.id}/checkpoints?limit=2&order=desc`, { key: h.key });
    expect(page1.json.data.map((c: { step: number }) => c.step)).toEqual([4, 3]);
    expect(page1.json).toMatchObject({ has_more: true, first_id: page1.json.data[0].id, last_id: page1.json.data[1].id });
    const page2 = await api(h.page, 'GET', `/v1/preview/models/${model.id}/checkpoints?limit=2&order=desc&after=${page1.json.last_id}`, {
      key: h.key,
    });
    expect(page2.json.data.map((c: { step: number }) => c.step)).toEqual([2, 1]);
    expect(page2.json.has_more).toBe(true);
    const page3 = await api(h.page, 'GET', `/v1/preview/models/${model.id}/checkpoints?limit=2&order=desc&after=${page2.json.last_id}`, {
      key: h.key,
    });
    expect(page3.json).toMatchObject({ has_more: false, data: [{ step: 0 }] });

    const del = await api(h.page, 'DELETE', `/v1/preview/models/${model.id}/checkpoints`, { key: h.key, body: { steps: [1, 3, 99] } });
    expect(del.json).toEqual({ deleted_count: 2, not_found_steps: [99] });
    const db = await dumpHearthDb(h.page);
    const ids = new Set(db.checkpoints.filter((c) => c.modelId === model.id).map((c) => c.id));
    expect(
      db.checkpoints
        .filter((c) => c.modelId === model.id)
        .map((c) => c.step)
        .sort((a, b) => a - b),
    ).toEqual([0, 2, 4]);
    // Every stored file belongs to a checkpoint that exists.
    const live = new Set(db.checkpoints.map((c) => c.id));
    expect(db.checkpointFiles.every((f) => live.has(f.checkpointId))).toBe(true);
    expect(db.checkpointFiles.filter((f) => ids.has(f.checkpointId))).toHaveLength(4);
  });

  it('logs trajectories and attaches split/metric to the latest checkpoint', async () => {
    const model = (await register('logged')).json;
    const res = await api(h.page, 'POST', `/v1/preview/models/${model.id}/log`, {
      key: h.key,
      body: {
        model_id: model.id,
        split: 'val',
        trajectory_groups: [
          {
            trajectories: [
              { messages_and_choices: [{ role: 'user', content: 'x' }], reward: 1 },
              { messages_and_choices: [], reward: 0.5 },
            ],
            exceptions: [],
          },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
    const latest = await api(h.page, 'GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`, { key: h.key });
    expect(latest.json.data[0].metrics).toMatchObject({ 'val/reward': 0.75, 'val/reward_std_dev': 0.25, 'val/exception_rate': 0 });
  });

  it('answers 422 with FastAPI detail items for invalid trajectories, writing nothing', async () => {
    const model = (await register('invalid-log')).json;
    const before = await dumpHearthDb(h.page);
    const res = await api(h.page, 'POST', `/v1/preview/models/${model.id}/log`, {
      key: h.key,
      body: {
        split: 'val',
        trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ finish_reason: 'stop', index: 0 }], reward: 'high' }] }],
      },
    });
    expect(res.status).toBe(422);
    expect(res.json.detail.map((d: { loc: unknown[] }) => d.loc.join('.'))).toEqual([
      'body.trajectory_groups.0.trajectories.0.messages_and_choices.0.message',
      'body.trajectory_groups.0.trajectories.0.reward',
    ]);
    const after = await dumpHearthDb(h.page);
    expect(after.trajectoryLogs.length).toBe(before.trajectoryLogs.length);
  });

  it('answers 422 json_invalid for malformed JSON and 415 for a non-JSON body', async () => {
    const bad = await api(h.page, 'POST', '/v1/preview/models', {
      key: h.key,
      rawBody: '{oops',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].type).toBe('json_invalid');
    const text = await api(h.page, 'POST', '/v1/preview/models', {
      key: h.key,
      rawBody: 'hello',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    // Uploads refuse JSON the same way: 415 on every multipart route.
    for (const path of ['/v1/preview/artifacts', '/v1/preview/base-models/files']) {
      const json = await api(h.page, 'POST', path, { key: h.key, body: {} });
      expect(json.status, path).toBe(415);
      expect(json.json.detail, path).toMatch(/multipart\/form-data/);
    }
  });
});

describe('training jobs', () => {
  // Issue 6 trains for real: the RL job has nothing trainable (one trajectory per group), the SFT
  // job trains two batches on SwiftShader, hence the long limit.
  it('queues RL and SFT jobs that run to training_ended, and survive a reload', { timeout: 900_000 }, async () => {
    const model = (await register('trainee')).json;
    const rl = await api(h.page, 'POST', '/v1/preview/training-jobs', {
      key: h.key,
      body: {
        model_id: model.id,
        trajectory_groups: [{ trajectories: [{ messages_and_choices: [], reward: 1 }] }],
        experimental_config: { learning_rate: 1e-5, epsilon: null },
      },
    });
    expect(rl.status).toBe(200);
    expect(rl.json).toMatchObject({ model_id: model.id, kind: 'rl' });
    h.server.files.set('/data/train.jsonl', {
      type: 'application/jsonl',
      body: [1, 2, 3]
        .map((i) =>
          JSON.stringify({
            messages: [
              { role: 'user', content: `${i}+${i}?` },
              { role: 'assistant', content: `${2 * i}` },
            ],
          }),
        )
        .join('\n'),
    });
    const sft = await api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
      key: h.key,
      body: { model_id: model.id, training_data_url: '/data/train.jsonl', config: { batch_size: 2, learning_rate: 1e-4 } },
    });
    expect(sft.status, sft.text).toBe(200);

    for (const [id, steps] of [
      [rl.json.id, 0],
      [sft.json.id, 2],
    ] as const) {
      const job = await waitForJob(id, h.key, 8000);
      expect(job.status, job.error_message).toBe('COMPLETED');
      const events = await api(h.page, 'GET', `/v1/preview/training-jobs/${id}/events?limit=1`, { key: h.key });
      expect(events.json).toMatchObject({ has_more: true, data: [{ type: 'training_started', data: { num_sequences: steps } }] });
      const rest = await api(h.page, 'GET', `/v1/preview/training-jobs/${id}/events?after=${events.json.last_id}`, { key: h.key });
      expect(rest.json.has_more).toBe(false);
      expect(rest.json.data.map((e: { type: string }) => e.type)).toEqual([...Array(steps).fill('gradient_step'), 'training_ended']);
    }

    await h.page.reload();
    await h.page.evaluate(() => globalThis.hearth.ready());
    const again = await api(h.page, 'GET', `/v1/preview/training-jobs/${sft.json.id}`, { key: h.key });
    expect(again.json).toMatchObject({ status: 'COMPLETED', kind: 'sft' });
    const db = await dumpHearthDb(h.page);
    expect(db.artifacts.filter((a) => a.modelId === model.id)).toHaveLength(1);
  });

  it('answers 422 for an SFT data URL that does not resolve', async () => {
    const model = (await register('no-data')).json;
    const res = await api(h.page, 'POST', '/v1/preview/sft-training-jobs', {
      key: h.key,
      body: { model_id: model.id, training_data_url: '/data/missing.jsonl' },
    });
    expect(res.status).toBe(422);
    expect(res.json.detail[0].msg).toMatch(/HTTP 404/);
  });
});

describe('deleting a model', () => {
  it('removes everything it owns and leaves no orphaned record', { timeout: 600_000 }, async () => {
    const model = (await register('cascade')).json;
    await api(h.page, 'POST', `/v1/preview/models/${model.id}/log`, {
      key: h.key,
      body: { split: 'train', trajectory_groups: [{ trajectories: [{ messages_and_choices: [], reward: 1 }] }] },
    });
    const job = (
      await api(h.page, 'POST', '/v1/preview/training-jobs', {
        key: h.key,
        body: { model_id: model.id, trajectory_groups: [{ trajectories: [] }] },
      })
    ).json;
    await waitForJob(job.id, h.key, 8000);
    const del = await api(h.page, 'DELETE', `/v1/preview/models/${model.id}`, { key: h.key });
    // Step 0 and the step the job advanced to with nothing trainable (issue 6).
    expect(del.json).toEqual({ model_id: model.id, deleted_checkpoints: 2, deleted_run: true });

    const db = await dumpHearthDb(h.page);
    const models = new Set(db.models.map((m) => m.id));
    const checkpoints = new Set(db.checkpoints.map((c) => c.id));
    const jobs = new Set(db.trainingJobs.map((j) => j.id));
    for (const store of ['checkpoints', 'runs', 'trajectoryLogs', 'trainingJobs', 'artifacts']) {
      expect(
        db[store].every((r) => models.has(r.modelId)),
        store,
      ).toBe(true);
    }
    expect(db.checkpointFiles.every((f) => checkpoints.has(f.checkpointId))).toBe(true);
    expect(db.jobInputs.every((i) => jobs.has(i.jobId))).toBe(true);
    expect(db.jobEvents.every((ev) => jobs.has(ev.jobId))).toBe(true);
    expect((await api(h.page, 'GET', `/v1/preview/training-jobs/${job.id}`, { key: h.key })).status).toBe(404);
  });
});

describe('the openai SDK in the page', () => {
  it('reaches /v1/preview like ART’s client and gets a chat completion', async () => {
    await loadOpenAI(h.page);
    const result = await h.page.evaluate(async (key) => {
      const OpenAI = (globalThis as any).OpenAI;
      const client = new OpenAI({ baseURL: `${location.origin}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
      const model = await client.post('/preview/models', {
        body: { entity: null, project: 'sdk', name: 'sdk-model', base_model: 'hearth/tiny-chat', return_existing: true },
      });
      const page = await client.get(`/preview/models/${model.id}/checkpoints`, { query: { limit: 1, order: 'desc' } });
      let chatError: { status?: number; message?: string; name?: string } = {};
      let chatTokens = 0;
      try {
        const chat = await client.chat.completions.create({
          model: 'hearth/tiny-chat',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 2,
        });
        chatTokens = chat.usage.completion_tokens;
      } catch (err: any) {
        chatError = { status: err.status, message: err.message, name: err.constructor.name };
      }
      let authError: { status?: number; name?: string } = {};
      try {
        await new OpenAI({ baseURL: `${location.origin}/v1`, apiKey: 'hth_wrong', dangerouslyAllowBrowser: true, maxRetries: 0 }).post(
          '/preview/models',
          { body: {} },
        );
      } catch (err: any) {
        authError = { status: err.status, name: err.constructor.name };
      }
      return { model, step: page.data[0].step, chatError, chatTokens, authError };
    }, h.key);
    expect(result.model).toMatchObject({ project: 'sdk', name: 'sdk-model' });
    expect(result.step).toBe(0);
    expect(result.chatError).toEqual({});
    expect(result.chatTokens).toBeGreaterThanOrEqual(1);
    expect(result.chatTokens).toBeLessThanOrEqual(2);
    expect(result.authError).toEqual({ status: 401, name: 'AuthenticationError' });
  });
});
