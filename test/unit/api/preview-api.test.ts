// The /v1/preview endpoints through the real app, services and store (fake-indexeddb in Node;
// the browser's IndexedDB is covered by test/e2e): auth and API keys, isolation between
// principals, models, checkpoints, trajectory logs, jobs, and cascade delete.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCheckpoint } from '../../../src/service/checkpoints';
import { pageTrajectoryGroups, runHistory } from '../../../src/store/trajectory-logs';
import { startEngine, type TestEngine } from './engine-fixture';

let e: TestEngine;
beforeAll(async () => {
  e = await startEngine();
});
afterAll(() => e.close());

const register = (name: string, extra: Record<string, unknown> = {}, key?: string) =>
  e.call('POST', '/v1/preview/models', {
    key,
    body: { entity: null, project: 'proj', name, base_model: 'hearth/tiny-chat', return_existing: true, ...extra },
  });

async function newPrincipal(name: string): Promise<string> {
  const res = await e.call('POST', '/v1/preview/api-keys', { body: { name } });
  expect(res.status).toBe(200);
  return res.json.key;
}

const adapter = (n: number) => ({ adapterConfig: new TextEncoder().encode(`{"r":${n}}`), adapterModel: new Uint8Array(1024).fill(n) });

describe('authentication', () => {
  it('answers 401 without a key, with a bad scheme, or with an unknown key', async () => {
    for (const key of [null, 'not-a-real-key']) {
      const res = await e.call('GET', '/v1/preview/models', { key });
      expect(res.status).toBe(401);
      expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
      expect(typeof res.json.detail).toBe('string');
    }
    const basic = await e.call('GET', '/v1/preview/models', { key: null, headers: { Authorization: 'Basic abc' } });
    expect(basic.status).toBe(401);
  });

  it('answers chat with the vLLM envelope: 401 without a key, 503 until chat exists, trailing slash too', async () => {
    const unauth = await e.call('POST', '/v1/chat/completions', { key: null, body: { messages: [] } });
    expect(unauth.status).toBe(401);
    expect(unauth.json.error).toMatchObject({ type: 'AuthenticationError', code: 401 });
    for (const path of ['/v1/chat/completions', '/v1/chat/completions/']) {
      const res = await e.call('POST', path, { body: { messages: [{ role: 'user', content: 'hi' }] } });
      expect(res.status).toBe(503);
      expect(res.json.error).toMatchObject({ type: 'ServiceUnavailableError', param: null, code: 503 });
      expect(res.json.error.message).toMatch(/not available yet/);
    }
  });
});

describe('engine status', () => {
  it('reports why there is no GPU while the rest of the API works', async () => {
    const res = await e.call('GET', '/v1/preview/engine');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'engine', state: 'ready', gpu: null, gpu_status: 'unavailable' });
    expect(res.json.gpu_error).toMatch(/WebGPU is not available/);
    expect(res.json.base_models.map((m: { id: string }) => m.id)).toContain('hearth/tiny-chat');
    expect((await e.call('GET', '/v1/preview/engine', { key: null })).status).toBe(401);
  });
});

describe('API keys', () => {
  it('creates a key once, lists keys without secrets, and revokes', async () => {
    const created = await e.call('POST', '/v1/preview/api-keys', { body: { name: 'alice', entity: 'alice-team' } });
    expect(created.json).toMatchObject({ object: 'api_key', name: 'alice', entity: 'alice-team', admin: false });
    expect(created.json.key).toMatch(/^hth_[A-Za-z0-9_-]{43}$/);
    const list = await e.call('GET', '/v1/preview/api-keys');
    expect(list.json.object).toBe('list');
    expect(list.json.data.map((k: { id: string }) => k.id)).toContain(created.json.id);
    expect(JSON.stringify(list.json)).not.toContain(created.json.key);
    expect(JSON.stringify(list.json)).not.toContain(e.adminKey);
    expect(list.json.data.find((k: { id: string }) => k.id === created.json.id).prefix).toBe(created.json.key.slice(0, 10));

    // The new key works, is not admin, and stops working once revoked.
    expect((await e.call('GET', '/v1/preview/models', { key: created.json.key })).status).toBe(200);
    expect((await e.call('GET', '/v1/preview/api-keys', { key: created.json.key })).status).toBe(403);
    const revoked = await e.call('DELETE', `/v1/preview/api-keys/${created.json.id}`);
    expect(revoked.json).toEqual({ id: created.json.id, object: 'api_key', deleted: true });
    expect((await e.call('GET', '/v1/preview/models', { key: created.json.key })).status).toBe(401);
    expect((await e.call('DELETE', `/v1/preview/api-keys/${created.json.id}`)).status).toBe(404);
  });

  it("refuses to revoke the owner's admin key", async () => {
    const list = await e.call('GET', '/v1/preview/api-keys');
    const admin = list.json.data.find((k: { admin: boolean }) => k.admin);
    expect((await e.call('DELETE', `/v1/preview/api-keys/${admin.id}`)).status).toBe(409);
    expect((await e.call('GET', '/v1/preview/models')).status).toBe(200);
  });

  it('stores keys only as hashes', async () => {
    const key = await newPrincipal('hashcheck');
    const rows = await e.db.getAll('apiKeys');
    expect(JSON.stringify(rows)).not.toContain(key);
  });
});

describe('models', () => {
  it('registers with the caller entity, a run id and a step-0 checkpoint', async () => {
    const res = await register('reg');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ entity: 'local', project: 'proj', name: 'reg', base_model: 'hearth/tiny-chat' });
    expect(res.json.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.run_id).toMatch(/^[a-z0-9]{8}$/);
    const latest = await e.call('GET', `/v1/preview/models/${res.json.id}/checkpoints?limit=1&order=desc`);
    expect(latest.json.data).toHaveLength(1);
    expect(latest.json.data[0]).toMatchObject({ step: 0, metrics: {} });
    expect((await e.call('GET', `/v1/preview/models/${res.json.id}`)).json).toEqual(res.json);
  });

  it('returns the existing model with return_existing, 409 without it or with another base model', async () => {
    const a = await register('idem');
    const b = await register('idem');
    expect(b.json.id).toBe(a.json.id);
    expect((await register('idem', { return_existing: false })).status).toBe(409);
    expect((await register('idem', { base_model: 'hearth/tiny-qwen2' })).status).toBe(409);
    const c = await register('idem', { entity: 'other-entity' });
    expect(c.json.id).not.toBe(a.json.id);
  });

  it('lists models in a list envelope', async () => {
    const res = await e.call('GET', '/v1/preview/models?limit=2');
    expect(res.json).toMatchObject({ object: 'list', has_more: true });
    expect(res.json.data).toHaveLength(2);
    expect(res.json.first_id).toBe(res.json.data[0].id);
    const next = await e.call('GET', `/v1/preview/models?limit=100&after=${res.json.last_id}`);
    expect(next.json.data.map((m: { id: string }) => m.id)).not.toContain(res.json.data[1].id);
  });
});

describe('checkpoints', () => {
  let modelId: string;
  beforeAll(async () => {
    modelId = (await register('ckpt')).json.id;
    for (let i = 1; i <= 5; i++) await addCheckpoint(e.services, modelId, (await e.db.get('models', modelId))!.principalId, adapter(i));
  });

  it('pages ascending and descending with after, has_more, first_id and last_id', async () => {
    const steps = async (order: string, limit: number) => {
      const seen: number[][] = [];
      let after = '';
      for (;;) {
        const res = await e.call(
          'GET',
          `/v1/preview/models/${modelId}/checkpoints?order=${order}&limit=${limit}${after && `&after=${after}`}`,
        );
        expect(res.json.first_id).toBe(res.json.data[0]?.id ?? '');
        expect(res.json.last_id).toBe(res.json.data.at(-1)?.id ?? '');
        seen.push(res.json.data.map((c: { step: number }) => c.step));
        if (!res.json.has_more) return seen;
        after = res.json.data.at(-1).id;
      }
    };
    expect(await steps('asc', 4)).toEqual([
      [0, 1, 2, 3],
      [4, 5],
    ]);
    expect(await steps('desc', 2)).toEqual([
      [5, 4],
      [3, 2],
      [1, 0],
    ]);
    expect(await steps('asc', 6)).toEqual([[0, 1, 2, 3, 4, 5]]);
    const defaults = await e.call('GET', `/v1/preview/models/${modelId}/checkpoints`);
    expect(defaults.json.data.map((c: { step: number }) => c.step)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('deletes chosen steps, reports the missing ones, and frees their adapter files', async () => {
    expect(await e.db.count('checkpointFiles')).toBeGreaterThanOrEqual(10);
    const before = await e.db.count('checkpointFiles');
    const res = await e.call('DELETE', `/v1/preview/models/${modelId}/checkpoints`, { body: { steps: [1, 2, 2, 9, 42] } });
    expect(res.json).toEqual({ deleted_count: 2, not_found_steps: [9, 42] });
    expect(await e.db.count('checkpointFiles')).toBe(before - 4);
    const left = await e.call('GET', `/v1/preview/models/${modelId}/checkpoints`);
    expect(left.json.data.map((c: { step: number }) => c.step)).toEqual([0, 3, 4, 5]);
  });
});

describe('trajectory logs', () => {
  it('computes metrics and stores them as split/metric on the latest checkpoint and in the run', async () => {
    const model = (await register('logged')).json;
    const owner = (await e.db.get('models', model.id))!.principalId;
    await addCheckpoint(e.services, model.id, owner, adapter(1));
    const choice = {
      finish_reason: 'stop',
      index: 0,
      logprobs: { content: [{ token: 'token_id:5', logprob: -0.1, bytes: [104], top_logprobs: [] }], refusal: null },
      message: { role: 'assistant', content: 'hi', tool_calls: null, refusal: null, reasoning_content: null },
      vendor_extra: { anything: true },
    };
    const body = {
      model_id: model.id,
      split: 'val',
      trajectory_groups: [
        {
          trajectories: [
            {
              messages_and_choices: [{ role: 'user', content: 'q' }, choice],
              reward: 1,
              metrics: { correct: true },
              metadata: { k: 'v' },
              logs: [],
              tools: null,
              additional_histories: [],
              initial_policy_version: null,
              final_policy_version: null,
              new_field: 1,
            },
            { messages_and_choices: [{ role: 'user', content: 'q' }, choice], reward: 0, metrics: { correct: false } },
          ],
          exceptions: [{ type: 'ValueError', message: 'rollout failed', traceback: '...' }],
          metadata: {},
          metrics: {},
          logs: [],
        },
      ],
    };
    const res = await e.call('POST', `/v1/preview/models/${model.id}/log`, { body });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toEqual({});
    const [latest] = (await e.call('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).json.data;
    expect(latest.step).toBe(1);
    expect(latest.metrics['val/reward']).toBe(0.5);
    expect(latest.metrics['val/exception_rate']).toBeCloseTo(1 / 3, 12);
    expect(latest.metrics['val/correct']).toBe(0.5);
    expect(latest.metrics['val/reward_std_dev']).toBe(0.5);
    expect(await runHistory(e.db, model.run_id)).toEqual([expect.objectContaining({ step: 1, metrics: latest.metrics })]);
    const logs = await e.db.getAllFromIndex('trajectoryLogs', 'by-model', model.id);
    expect(logs).toHaveLength(1);
    const { items } = await pageTrajectoryGroups(e.db, model.id, { limit: 10 });
    expect((items[0].group as any).trajectories[0].new_field).toBe(1);
  });

  it('refuses a body model_id that differs from the path', async () => {
    const model = (await register('mismatch')).json;
    const res = await e.call('POST', `/v1/preview/models/${model.id}/log`, {
      body: { model_id: crypto.randomUUID(), split: 'val', trajectory_groups: [] },
    });
    expect(res.status).toBe(422);
    expect(res.json.detail[0].loc).toEqual(['body', 'model_id']);
  });
});

describe('isolation between principals', () => {
  it('gives another principal 404 for a model, its checkpoints, logs, deletion and jobs, exactly as for unknown ids', async () => {
    const bob = await newPrincipal('bob');
    const model = (await register('private')).json;
    const job = (
      await e.call('POST', '/v1/preview/training-jobs', { body: { model_id: model.id, trajectory_groups: [{ trajectories: [] }] } })
    ).json;
    const unknown = crypto.randomUUID();
    const probes: [string, string, unknown?][] = [
      ['GET', `/v1/preview/models/${model.id}`],
      ['GET', `/v1/preview/models/${model.id}/checkpoints`],
      ['DELETE', `/v1/preview/models/${model.id}/checkpoints`, { steps: [0] }],
      ['POST', `/v1/preview/models/${model.id}/log`, { split: 'val', trajectory_groups: [] }],
      ['DELETE', `/v1/preview/models/${model.id}`],
      ['GET', `/v1/preview/training-jobs/${job.id}`],
      ['GET', `/v1/preview/training-jobs/${job.id}/events`],
      ['POST', '/v1/preview/training-jobs', { model_id: model.id, trajectory_groups: [{ trajectories: [] }] }],
    ];
    for (const [method, path, body] of probes) {
      const theirs = await e.call(method, path, { key: bob, body });
      const missing = await e.call(method, path.replace(model.id, unknown).replace(job.id, unknown), {
        key: bob,
        body: body && JSON.parse(JSON.stringify(body).replace(model.id, unknown)),
      });
      expect(theirs.status, `${method} ${path}`).toBe(404);
      expect(theirs.json.detail.replace(model.id, 'ID').replace(job.id, 'ID')).toBe(missing.json.detail.replace(unknown, 'ID'));
    }
    expect((await e.call('GET', '/v1/preview/models', { key: bob })).json.data).toEqual([]);
    // Nothing of the owner's was touched.
    expect((await e.call('GET', `/v1/preview/models/${model.id}/checkpoints`)).json.data).toHaveLength(1);
  });

  it('keeps model names per principal', async () => {
    const carol = await newPrincipal('carol');
    const mine = (await register('shared-name', { entity: 'team' })).json;
    const theirs = (await register('shared-name', { entity: 'team' }, carol)).json;
    expect(theirs.id).not.toBe(mine.id);
  });
});

describe('deleting a model', () => {
  it('removes the model, checkpoints and files, artifacts, logs, run, jobs and events in one go', async () => {
    const model = (await register('doomed')).json;
    const owner = (await e.db.get('models', model.id))!.principalId;
    const keep = (await register('kept')).json;
    await addCheckpoint(e.services, model.id, owner, adapter(7));
    await addCheckpoint(e.services, keep.id, owner, adapter(8));
    await e.call('POST', `/v1/preview/models/${model.id}/log`, {
      body: { split: 'train', trajectory_groups: [{ trajectories: [{ messages_and_choices: [], reward: 1 }] }] },
    });
    const jsonl = JSON.stringify({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: 'y' },
      ],
    });
    const sft = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: {
        model_id: model.id,
        training_data_url: `data:application/jsonl,${encodeURIComponent(jsonl)}`,
        config: { batch_size: 1, learning_rate: [1e-4] },
      },
    });
    expect(sft.status, JSON.stringify(sft.json)).toBe(200);
    await e.runner.idle();
    expect((await e.db.getAllFromIndex('artifacts', 'by-model', model.id)).length).toBe(1);

    const countAll = async () => ({
      files: await e.db.count('checkpointFiles'),
      jobs: await e.db.count('trainingJobs'),
      inputs: await e.db.count('jobInputs'),
      events: await e.db.count('jobEvents'),
    });
    const before = await countAll();
    const res = await e.call('DELETE', `/v1/preview/models/${model.id}`);
    expect(res.json).toEqual({ model_id: model.id, deleted_checkpoints: 2, deleted_run: true });
    const after = await countAll();
    expect(after).toEqual({ files: before.files - 2, jobs: before.jobs - 1, inputs: before.inputs - 1, events: before.events - 2 });
    for (const [store, index] of [
      ['checkpoints', 'by-model-step'],
      ['runs', 'by-model'],
      ['trajectoryLogs', 'by-model'],
      ['artifacts', 'by-model'],
      ['trainingJobs', 'by-model'],
    ] as const) {
      const range = store === 'checkpoints' ? IDBKeyRange.bound([model.id, -1], [model.id, Infinity]) : IDBKeyRange.only(model.id);
      expect(await e.db.countFromIndex(store, index as never, range), store).toBe(0);
    }
    expect((await e.call('GET', `/v1/preview/training-jobs/${sft.json.id}`)).status).toBe(404);
    expect((await e.call('GET', `/v1/preview/models/${model.id}`)).status).toBe(404);
    expect((await e.call('DELETE', `/v1/preview/models/${model.id}`)).status).toBe(404);
    expect((await e.call('GET', `/v1/preview/models/${keep.id}/checkpoints`)).json.data.map((c: { step: number }) => c.step)).toEqual([
      0, 1,
    ]);
  });
});

describe('training jobs', () => {
  it('stores an SFT job with its resolved data and settings; events page with after', async () => {
    const model = (await register('sft')).json;
    const lines = Array.from({ length: 5 }, (_, i) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: `q${i}` },
          { role: 'assistant', content: `a${i}` },
        ],
      }),
    );
    const res = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: {
        model_id: model.id,
        training_data_url: `data:application/jsonl;base64,${Buffer.from(lines.join('\n')).toString('base64')}`,
        config: { batch_size: 2, learning_rate: [3e-4, 2e-4, 1e-4] },
      },
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toMatchObject({ model_id: model.id, kind: 'sft', status: 'PENDING' });
    const input = (await e.db.get('jobInputs', res.json.id))!.input as Record<string, unknown>;
    expect(input).toMatchObject({
      kind: 'sft',
      batchSize: 2,
      numExamples: 5,
      numBatches: 3,
      learningRate: [3e-4, 2e-4, 1e-4],
      assistantTurns: 'all',
    });
    await e.runner.idle();
    const first = await e.call('GET', `/v1/preview/training-jobs/${res.json.id}/events?limit=1`);
    expect(first.json).toMatchObject({ has_more: true });
    expect(first.json.data[0].type).toBe('training_started');
    const rest = await e.call('GET', `/v1/preview/training-jobs/${res.json.id}/events?after=${first.json.data[0].id}`);
    expect(rest.json.has_more).toBe(false);
    expect(rest.json.data.map((ev: { type: string }) => ev.type)).toEqual(['training_failed']);
    expect(rest.json.data[0].data.error_message).toMatch(/not available yet/);
  });

  it('drops null experimental settings, keeping the ones the client chose', async () => {
    const model = (await register('rl')).json;
    const res = await e.call('POST', '/v1/preview/training-jobs', {
      body: {
        model_id: model.id,
        trajectory_groups: [{ trajectories: [{ messages_and_choices: [], reward: 1 }] }],
        experimental_config: {
          learning_rate: 5e-6,
          advantage_balance: 0,
          importance_sampling_level: 'token',
          epsilon: null,
          epsilon_high: null,
          kimi_k2_tau: null,
          ppo: false,
          precalculate_logprobs: false,
          scale_rewards: true,
          mask_prob_ratio: false,
          max_negative_advantage_importance_sampling_weight: null,
        },
      },
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const input = (await e.db.get('jobInputs', res.json.id))!.input as { experimentalConfig: Record<string, unknown> };
    expect(input.experimentalConfig).toEqual({
      learning_rate: 5e-6,
      advantage_balance: 0,
      importance_sampling_level: 'token',
      ppo: false,
      precalculate_logprobs: false,
      scale_rewards: true,
      mask_prob_ratio: false,
    });
  });
});
