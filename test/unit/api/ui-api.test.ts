// The endpoints the app's views read (Hearth extensions under /v1/preview) through the real app,
// services and store (fake-indexeddb): job listing, a model's run history and logged
// trajectories, and storage per kind. Base models have their own file (base-models.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCheckpoint } from '../../../src/service/checkpoints';
import { LoraTrainer } from '../../../src/service/training/lora-trainer';
import { ReferenceTrainingEngine, servedFor, tinyTrainModel } from '../training/reference-engine';
import { startEngine, type TestEngine } from './engine-fixture';

let e: TestEngine;
beforeAll(async () => {
  e = await startEngine();
});
afterAll(() => e.close());

const register = async (name: string, key?: string) =>
  (
    await e.call('POST', '/v1/preview/models', {
      key,
      body: { entity: null, project: 'ui', name, base_model: 'hearth/tiny-chat', return_existing: true },
    })
  ).json;

async function newKey(name: string): Promise<string> {
  return (await e.call('POST', '/v1/preview/api-keys', { body: { name } })).json.key;
}

const trajectory = (reward: number, text: string) => ({
  messages_and_choices: [
    { role: 'user', content: `<b>${text}</b>` },
    { role: 'assistant', content: 'ok', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1}' } }] },
  ],
  reward,
  metrics: { correct: reward > 0 },
});
const log = (modelId: string, split: string, groups: unknown[]) =>
  e.call('POST', `/v1/preview/models/${modelId}/log`, { body: { split, trajectory_groups: groups } });

describe('GET /v1/preview/training-jobs', () => {
  it('lists the caller’s jobs newest first, per model, paged, and never another principal’s', async () => {
    const a = await register('jobs-a');
    const b = await register('jobs-b');
    const ids: string[] = [];
    for (const model of [a, b, a]) {
      const res = await e.call('POST', '/v1/preview/training-jobs', {
        body: { model_id: model.id, trajectory_groups: [{ trajectories: [trajectory(1, 'x')] }] },
      });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      ids.push(res.json.id);
    }
    await e.runner.idle();
    const all = await e.call('GET', '/v1/preview/training-jobs');
    expect(all.status).toBe(200);
    expect(all.json).toMatchObject({ object: 'list', has_more: false });
    const mine = all.json.data.map((j: { id: string }) => j.id).filter((id: string) => ids.includes(id));
    expect(mine).toEqual([...ids].reverse());
    // The same object GET /training-jobs/{id} answers.
    const one = await e.call('GET', `/v1/preview/training-jobs/${ids[0]}`);
    expect(all.json.data.find((j: { id: string }) => j.id === ids[0])).toEqual(one.json);

    const ofA = await e.call('GET', `/v1/preview/training-jobs?model_id=${a.id}&order=asc`);
    expect(ofA.json.data.map((j: { id: string }) => j.id)).toEqual([ids[0], ids[2]]);
    const first = await e.call('GET', `/v1/preview/training-jobs?model_id=${a.id}&limit=1`);
    expect(first.json).toMatchObject({ has_more: true, first_id: ids[2], last_id: ids[2] });
    const next = await e.call('GET', `/v1/preview/training-jobs?model_id=${a.id}&limit=1&after=${ids[2]}`);
    expect(next.json).toMatchObject({ has_more: false, first_id: ids[0] });

    const bob = await newKey('jobs-bob');
    expect((await e.call('GET', '/v1/preview/training-jobs', { key: bob })).json.data).toEqual([]);
    expect((await e.call('GET', `/v1/preview/training-jobs?model_id=${a.id}`, { key: bob })).status).toBe(404);
    expect((await e.call('GET', '/v1/preview/training-jobs?limit=0')).status).toBe(422);
    expect((await e.call('GET', '/v1/preview/training-jobs', { key: null })).status).toBe(401);
  });
});

describe('GET /v1/preview/models/{id}/run and /trajectories', () => {
  it('answers every /log call’s metrics at its step and split, and the groups filtered by split and step', async () => {
    const model = await register('runs');
    const owner = (await e.db.get('models', model.id))!.principalId;
    expect((await e.call('GET', `/v1/preview/models/${model.id}/run`)).json).toEqual({ object: 'run', model_id: model.id, history: [] });

    await log(model.id, 'train', [{ trajectories: [trajectory(1, 'a'), trajectory(0, 'b')] }, { trajectories: [trajectory(1, 'c')] }]);
    await addCheckpoint(e.services, model.id, owner, { adapterConfig: new TextEncoder().encode('{}'), adapterModel: new Uint8Array(64) });
    await log(model.id, 'val', [{ trajectories: [trajectory(1, 'd')] }]);
    await log(model.id, 'train', [{ trajectories: [trajectory(0, 'e'), trajectory(0, 'f')] }]);

    const run = (await e.call('GET', `/v1/preview/models/${model.id}/run`)).json;
    expect(run.history.map((p: { step: number; split: string }) => [p.step, p.split])).toEqual([
      [0, 'train'],
      [1, 'val'],
      [1, 'train'],
    ]);
    expect(run.history[0].metrics).toMatchObject({ reward: 2 / 3, correct: 2 / 3, 'data/step_num_trajectories': 3 });
    expect(run.history[1].metrics.reward).toBe(1);
    expect(run.history[2].metrics).toMatchObject({ reward: 0, reward_std_dev: 0 });
    expect(Date.parse(run.history[0].logged_at)).not.toBeNaN();

    const all = (await e.call('GET', `/v1/preview/models/${model.id}/trajectories`)).json;
    expect(all.data).toHaveLength(4);
    expect(all.data.map((g: { split: string; step: number }) => `${g.split}@${g.step}`)).toEqual([
      'train@0',
      'train@0',
      'val@1',
      'train@1',
    ]);
    // The group exactly as logged: user content stays text, tool calls and rewards are there.
    expect(all.data[0].group.trajectories[0].messages_and_choices[0].content).toBe('<b>a</b>');
    expect(all.data[0].group.trajectories[0].messages_and_choices[1].tool_calls[0].function.name).toBe('add');
    expect(all.data[1].group.trajectories.map((t: { reward: number }) => t.reward)).toEqual([1]);

    const train1 = (await e.call('GET', `/v1/preview/models/${model.id}/trajectories?split=train&step=1`)).json;
    expect(train1.data.map((g: { group: any }) => g.group.trajectories.length)).toEqual([2]);
    const paged = (await e.call('GET', `/v1/preview/models/${model.id}/trajectories?limit=3`)).json;
    expect(paged).toMatchObject({ has_more: true, last_id: all.data[2].id });
    const rest = (await e.call('GET', `/v1/preview/models/${model.id}/trajectories?after=${paged.last_id}`)).json;
    expect(rest.data.map((g: { id: string }) => g.id)).toEqual([all.data[3].id]);

    expect((await e.call('GET', `/v1/preview/models/${model.id}/trajectories?step=x`)).status).toBe(422);
    expect((await e.call('GET', `/v1/preview/models/${model.id}/trajectories?after=nope`)).status).toBe(422);
    const bob = await newKey('runs-bob');
    expect((await e.call('GET', `/v1/preview/models/${model.id}/run`, { key: bob })).status).toBe(404);
    expect((await e.call('GET', `/v1/preview/models/${model.id}/trajectories`, { key: bob })).status).toBe(404);
  });
});

describe('training metrics in the run', () => {
  it('adds each completed job’s mean gradient-step metrics at its checkpoint’s step, as split "training"', async () => {
    const tiny = tinyTrainModel();
    const t = await startEngine({
      trainer: new LoraTrainer({ inference: async () => servedFor(tiny), training: async () => new ReferenceTrainingEngine(tiny) }),
    });
    try {
      const model = (
        await t.call('POST', '/v1/preview/models', { body: { project: 'ui', name: 'trained', base_model: 'hearth/tiny-chat' } })
      ).json;
      const line = (q: string, a: string) =>
        JSON.stringify({
          messages: [
            { role: 'user', content: q },
            { role: 'assistant', content: a },
          ],
        });
      const data = `data:application/jsonl,${encodeURIComponent([line('a', 'b'), line('c', 'd')].join('\n'))}`;
      const job = await t.call('POST', '/v1/preview/sft-training-jobs', {
        body: { model_id: model.id, training_data_url: data, config: { batch_size: 1, learning_rate: [1e-3, 1e-3] } },
      });
      expect(job.status, JSON.stringify(job.json)).toBe(200);
      await t.runner.idle();
      expect((await t.call('GET', `/v1/preview/training-jobs/${job.json.id}`)).json.status).toBe('COMPLETED');
      const steps = (await t.call('GET', `/v1/preview/training-jobs/${job.json.id}/events`)).json.data.filter(
        (x: { type: string }) => x.type === 'gradient_step',
      );
      expect(steps).toHaveLength(2);

      const run = (await t.call('GET', `/v1/preview/models/${model.id}/run`)).json;
      expect(run.history).toHaveLength(1);
      const [point] = run.history;
      expect(point).toMatchObject({ step: 1, split: 'training' });
      expect(point.metrics.gradient_steps).toBe(2);
      expect(point.metrics.loss).toBeCloseTo((steps[0].data.loss + steps[1].data.loss) / 2, 12);
      expect(point.metrics.learning_rate).toBeCloseTo(1e-3, 12);
      expect(point.metrics.grad_norm).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });
});

describe('GET /v1/preview/storage', () => {
  it('sums what the stores hold per kind, grows when data is stored, and is admin only', async () => {
    const before = (await e.call('GET', '/v1/preview/storage')).json;
    expect(before).toMatchObject({ object: 'storage', kinds: { weights: 0, other: expect.any(Number) } });
    const model = await register('storage');
    const owner = (await e.db.get('models', model.id))!.principalId;
    await addCheckpoint(e.services, model.id, owner, {
      adapterConfig: new TextEncoder().encode('{"r":8}'),
      adapterModel: new Uint8Array(5000),
    });
    await log(model.id, 'train', [{ trajectories: [trajectory(1, 'x'.repeat(3000))] }]);
    const after = (await e.call('GET', '/v1/preview/storage')).json;
    expect(after.kinds.checkpoints - before.kinds.checkpoints).toBe(5000 + '{"r":8}'.length);
    expect(after.kinds.trajectories - before.kinds.trajectories).toBeGreaterThan(3000);
    const { weights, checkpoints, trajectories, artifacts, other } = after.kinds;
    expect(weights + checkpoints + trajectories + artifacts + other).toBe(after.usage);

    const bob = await newKey('storage-bob');
    expect((await e.call('GET', '/v1/preview/storage', { key: bob })).status).toBe(403);
  });
});
