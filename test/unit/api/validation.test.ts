// Input validation of /v1/preview: FastAPI-style 422 bodies naming the offending field, and the
// 4xx answers for bodies that are not JSON, have the wrong content type, or are too large.
// Every failing request must leave the database untouched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonDeeperThan, MAX_JSON_DEPTH } from '../../../src/api/json-depth';
import { startEngine, type TestEngine } from './engine-fixture';

let e: TestEngine;
let modelId: string;
beforeAll(async () => {
  e = await startEngine({ maxBodyBytes: 64 * 1024 });
  modelId = (await e.call('POST', '/v1/preview/models', { body: { project: 'p', name: 'm', base_model: 'hearth/tiny-chat' } })).json.id;
});
afterAll(() => e.close());

async function counts(): Promise<number[]> {
  return Promise.all(
    (['models', 'checkpoints', 'trainingJobs', 'jobInputs', 'trajectoryLogs', 'artifacts', 'apiKeys'] as const).map((s) => e.db.count(s)),
  );
}

async function expect422(
  method: string,
  path: string,
  body: unknown,
): Promise<{ type: string; loc: unknown[]; msg: string; input: unknown; ctx: object }[]> {
  const before = await counts();
  const res = await e.call(method, path, { body });
  expect(res.status, JSON.stringify(res.json)).toBe(422);
  expect(Array.isArray(res.json.detail)).toBe(true);
  for (const d of res.json.detail) expect(Object.keys(d).sort()).toEqual(['ctx', 'input', 'loc', 'msg', 'type']);
  expect(await counts()).toEqual(before);
  return res.json.detail;
}

describe('422 bodies', () => {
  it('names a missing field with type missing', async () => {
    const [d] = await expect422('POST', '/v1/preview/models', { project: 'p', base_model: 'hearth/tiny-chat' });
    expect(d).toMatchObject({ type: 'missing', loc: ['body', 'name'], msg: 'Field required' });
  });

  it('names a wrong type and carries the offending input', async () => {
    const [d] = await expect422('POST', '/v1/preview/models', { project: 'p', name: 5, base_model: 'hearth/tiny-chat' });
    expect(d).toMatchObject({ type: 'string_type', loc: ['body', 'name'], input: 5 });
  });

  it('refuses unknown top-level fields one item per field', async () => {
    const details = await expect422('POST', '/v1/preview/models', {
      project: 'p',
      name: 'x',
      base_model: 'hearth/tiny-chat',
      colour: 'red',
      size: 1,
    });
    expect(details.map((d) => [d.type, d.loc])).toEqual([
      ['extra_forbidden', ['body', 'colour']],
      ['extra_forbidden', ['body', 'size']],
    ]);
  });

  it('lists the available base models for an unknown one', async () => {
    const [d] = await expect422('POST', '/v1/preview/models', { project: 'p', name: 'x', base_model: 'meta/llama-405b' });
    expect(d.loc).toEqual(['body', 'base_model']);
    expect(d.msg).toContain('hearth/tiny-chat');
    expect(d.input).toBe('meta/llama-405b');
  });

  it('locates errors deep inside trajectory groups', async () => {
    const details = await expect422('POST', '/v1/preview/training-jobs', {
      model_id: modelId,
      trajectory_groups: [
        {
          trajectories: [
            {
              messages_and_choices: [
                { role: 'user', content: 'hi' },
                {
                  finish_reason: 'stop',
                  index: 0,
                  message: { role: 'assistant', content: 'x' },
                  logprobs: { content: [{ token: 'a', logprob: 'high' }] },
                },
              ],
              reward: 1,
            },
            { messages_and_choices: [{ role: 'robot', content: 'beep' }] },
          ],
        },
      ],
    });
    expect(details.map((d) => [d.type, d.loc.join('.')])).toEqual([
      ['float_type', 'body.trajectory_groups.0.trajectories.0.messages_and_choices.1.logprobs.content.0.logprob'],
      ['literal_error', 'body.trajectory_groups.0.trajectories.1.messages_and_choices.0.role'],
      ['missing', 'body.trajectory_groups.0.trajectories.1.reward'],
    ]);
  });

  it('reports at most 20 issues, refuses an over-long list from its length, and cuts echoed inputs (issue 26)', async () => {
    const bad = Array(1000).fill({});
    const many = await expect422('POST', `/v1/preview/models/${modelId}/log`, {
      split: 'val',
      trajectory_groups: [{ trajectories: [{ reward: 1, messages_and_choices: bad }] }],
    });
    expect(many.length).toBe(20);
    expect(many[0].loc).toEqual(['body', 'trajectory_groups', 0, 'trajectories', 0, 'messages_and_choices', 0, 'finish_reason']);

    const unknown = await expect422('POST', '/v1/preview/models', {
      project: 'p',
      name: 'n',
      base_model: 'hearth/tiny-chat',
      ...Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
    });
    expect(unknown.length).toBe(20);
    expect(unknown[0]).toMatchObject({ type: 'extra_forbidden', loc: ['body', 'k0'], input: 0 });

    const [long] = await expect422('POST', `/v1/preview/models/${modelId}/log`, { split: 'val', trajectory_groups: Array(4097).fill(0) });
    expect(long).toMatchObject({
      type: 'too_long',
      loc: ['body', 'trajectory_groups'],
      msg: 'List should have at most 4096 items',
      ctx: { max_length: 4096 },
    });
    // The echo keeps the first 32 items and marks the cut.
    expect(long.input).toEqual([...Array(32).fill(0), '...']);
  });

  it('checks experimental_config values, treats null as default, refuses unknown keys', async () => {
    const details = await expect422('POST', '/v1/preview/training-jobs', {
      model_id: modelId,
      trajectory_groups: [{ trajectories: [] }],
      experimental_config: { learning_rate: -1, importance_sampling_level: 'tokens', epsilon: null, warp_drive: true },
    });
    // Items come in the schema's field order.
    expect(details.map((d) => [d.type, d.loc.join('.')])).toEqual([
      ['literal_error', 'body.experimental_config.importance_sampling_level'],
      ['greater_than', 'body.experimental_config.learning_rate'],
      ['extra_forbidden', 'body.experimental_config.warp_drive'],
    ]);
    expect(details[1].ctx).toEqual({ gt: 0 });
  });

  it('checks model_id is a UUID and query parameters are in range', async () => {
    const [d] = await expect422('POST', '/v1/preview/training-jobs', { model_id: 'abc', trajectory_groups: [{ trajectories: [] }] });
    expect(d).toMatchObject({ type: 'uuid_parsing', loc: ['body', 'model_id'] });
    for (const [query, type] of [
      ['limit=0', 'greater_than_equal'],
      ['limit=101', 'less_than_equal'],
      ['limit=ten', 'int_parsing'],
      ['order=sideways', 'literal_error'],
    ]) {
      const res = await e.call('GET', `/v1/preview/models/${modelId}/checkpoints?${query}`);
      expect(res.status).toBe(422);
      expect(res.json.detail[0].type).toBe(type);
      expect(res.json.detail[0].loc[0]).toBe('query');
    }
  });

  it('refuses an `after` cursor that is not an item of the list', async () => {
    const res = await e.call('GET', `/v1/preview/models/${modelId}/checkpoints?after=nope`);
    expect(res.status).toBe(422);
    expect(res.json.detail[0].loc).toEqual(['query', 'after']);
  });

  it('refuses an SFT job without a data URL, or with a learning-rate list of the wrong length', async () => {
    const [missing] = await expect422('POST', '/v1/preview/sft-training-jobs', { model_id: modelId });
    expect(missing).toMatchObject({ type: 'missing', loc: ['body', 'training_data_url'] });
    const jsonl = ['a', 'b', 'c']
      .map((x) =>
        JSON.stringify({
          messages: [
            { role: 'user', content: x },
            { role: 'assistant', content: x },
          ],
        }),
      )
      .join('\n');
    const url = `data:application/jsonl;base64,${Buffer.from(jsonl).toString('base64')}`;
    const [lr] = await expect422('POST', '/v1/preview/sft-training-jobs', {
      model_id: modelId,
      training_data_url: url,
      config: { batch_size: 2, learning_rate: [1e-4] },
    });
    expect(lr.loc).toEqual(['body', 'config', 'learning_rate']);
    expect(lr.msg).toMatch(/2 batches/);
  });

  it('refuses SFT data whose examples do not end with the assistant', async () => {
    const jsonl = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] });
    const [d] = await expect422('POST', '/v1/preview/sft-training-jobs', {
      model_id: modelId,
      training_data_url: `data:,${encodeURIComponent(jsonl)}`,
    });
    expect(d.msg).toMatch(/line 1: the last message must be the assistant/);
  });

  it('refuses wandb-artifact URLs with the reason', async () => {
    const [d] = await expect422('POST', '/v1/preview/sft-training-jobs', {
      model_id: modelId,
      training_data_url: 'wandb-artifact:///e/p/data:v0',
    });
    expect(d.msg).toMatch(/cannot resolve wandb-artifact/);
  });
});

describe('bodies that are not valid JSON requests', () => {
  it("answers FastAPI's 422 json_invalid for malformed JSON, as chat answers vLLM's 400 json_invalid", async () => {
    const res = await e.call('POST', '/v1/preview/models', { rawBody: '{"project": ', headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.json.detail).toMatchObject([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error' }]);
  });

  it('answers 415 for another content type', async () => {
    const res = await e.call('POST', '/v1/preview/models', {
      rawBody: 'project=p',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.json.detail).toMatch(/application\/json/);
  });

  it('answers 415 on every upload route for a body that is not multipart/form-data', async () => {
    for (const path of ['/v1/preview/artifacts', '/v1/preview/models/import', '/v1/preview/base-models/files']) {
      const res = await e.call('POST', path, { body: { model_id: modelId } });
      expect(res.status, path).toBe(415);
      expect(res.json.detail, path).toBe('Content-Type must be multipart/form-data (got "application/json").');
    }
  });

  it('answers 413 for a body over the limit, and writes nothing', async () => {
    const before = await counts();
    const big = { model_id: modelId, split: 'val', trajectory_groups: [{ trajectories: [], logs: ['x'.repeat(70 * 1024)] }] };
    const res = await e.call('POST', `/v1/preview/models/${modelId}/log`, { body: big });
    expect(res.status).toBe(413);
    expect(res.json.detail).toMatch(/larger than/);
    expect(await counts()).toEqual(before);
  });

  it('refuses JSON nested deeper than MAX_JSON_DEPTH on every family, and writes nothing (issue 10)', async () => {
    const before = await counts();
    const nested = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const headers = { 'Content-Type': 'application/json' };
    for (const path of ['/v1/preview/training-jobs', `/v1/preview/models/${modelId}/log`, '/v1/preview/models']) {
      const res = await e.call('POST', path, { rawBody: nested, headers });
      expect(res.status, path).toBe(422);
      expect(res.json.detail).toEqual([
        {
          type: 'json_invalid',
          loc: ['body'],
          msg: expect.stringMatching(/nested deeper than 64/),
          input: null,
          ctx: { max_depth: MAX_JSON_DEPTH },
        },
      ]);
    }
    const chat = await e.call('POST', '/v1/chat/completions', { rawBody: nested, headers });
    expect(chat.status).toBe(400);
    expect(chat.json.error).toMatchObject({ type: 'Bad Request', code: 400, message: expect.stringMatching(/nested deeper/) });
    expect(await counts()).toEqual(before);
  });

  it('measures depth outside strings only', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(jsonDeeperThan(deep(64), 64)).toBe(false);
    expect(jsonDeeperThan(deep(65), 64)).toBe(true);
    expect(jsonDeeperThan(JSON.stringify({ s: '[[[[{{{{\\"' }), 2)).toBe(false);
    expect(jsonDeeperThan(JSON.stringify({ a: [{ b: [1] }] }), 3)).toBe(true);
  });

  it('answers 404 in the preview envelope for unknown paths', async () => {
    const res = await e.call('GET', '/v1/preview/nothing-here');
    expect(res.status).toBe(404);
    expect(typeof res.json.detail).toBe('string');
  });
});
