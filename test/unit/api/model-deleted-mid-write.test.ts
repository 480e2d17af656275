// A model deleted by another request after the service checked it and before its write commits:
// the write's own transaction finds the model gone (the store's StoreNotFoundError), writes
// nothing, and the caller gets 404 in the preview envelope, not a 500. The real app, services and
// store over fake-indexeddb; the DELETE is a real concurrent request, slipped in right after the
// service's model lookup.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HearthDb } from '../../../src/store/schema';
import { ORIGIN, startEngine, type TestEngine } from './engine-fixture';

let e: TestEngine;
let realDb: HearthDb;
beforeAll(async () => {
  e = await startEngine();
  realDb = e.services.db;
});
afterAll(() => e.close());

async function newModel(name: string): Promise<string> {
  const res = await e.call('POST', '/v1/preview/models', { body: { entity: null, project: 'race', name, base_model: 'hearth/tiny-chat' } });
  expect(res.status).toBe(200);
  return res.json.id;
}

/** Lets the next lookup of `modelId` answer, then deletes the model through the API before the caller goes on. */
function deleteRightAfterLookup(modelId: string): void {
  let armed = true;
  e.services.db = new Proxy(realDb, {
    get(target, prop) {
      if (prop === 'get') {
        return async (store: 'models', key: string) => {
          const found = await target.get(store, key);
          if (armed && store === 'models' && key === modelId) {
            armed = false;
            const deleted = await e.call('DELETE', `/v1/preview/models/${modelId}`);
            expect(deleted.status).toBe(200);
          }
          return found;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function counts() {
  return {
    artifacts: await realDb.count('artifacts'),
    trainingJobs: await realDb.count('trainingJobs'),
    trajectoryLogs: await realDb.count('trajectoryLogs'),
  };
}

describe('a model deleted while a write is under way', () => {
  const cases: [string, (modelId: string) => Promise<{ status: number; json: any }>][] = [
    [
      'an artifact upload',
      async (modelId) => {
        const form = new FormData();
        form.append('model_id', modelId);
        form.append(
          'file',
          new File(['{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}'], 'train.jsonl'),
        );
        const res = await e.app.request(`${ORIGIN}/v1/preview/artifacts`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${e.adminKey}` },
          body: form,
        });
        return { status: res.status, json: await res.json() };
      },
    ],
    [
      'an RL training job',
      (modelId) => e.call('POST', '/v1/preview/training-jobs', { body: { model_id: modelId, trajectory_groups: [{ trajectories: [] }] } }),
    ],
    [
      'a trajectory log',
      (modelId) => e.call('POST', `/v1/preview/models/${modelId}/log`, { body: { split: 'val', trajectory_groups: [] } }),
    ],
  ];

  for (const [what, write] of cases) {
    it(`answers 404 for ${what} and writes nothing`, async () => {
      const modelId = await newModel(what.replaceAll(' ', '-'));
      const before = await counts();
      deleteRightAfterLookup(modelId);
      try {
        const res = await write(modelId);
        expect(res.status, JSON.stringify(res.json)).toBe(404);
        expect(res.json).toEqual({ detail: `Model ${modelId} no longer exists.` });
      } finally {
        e.services.db = realDb;
      }
      expect(await counts()).toEqual(before);
      expect((await e.call('GET', `/v1/preview/models/${modelId}`)).status).toBe(404);
    });
  }
});
