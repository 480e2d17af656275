// Training jobs when the browser's storage fills up (issue 10, item 9): no job stays PENDING or
// RUNNING once the runner is done with it. When not even its end fits, the API reads it FAILED
// at once (status, error_message, training_failed event), the end is stored as soon as space
// frees, and an engine that stopped before that leaves it for the next start to fail the same way.
//
// The store is the real one (over fake-indexeddb). The full disk is made as the browser makes it:
// every write that adds a record (put, add) fails with QuotaExceededError; deletes still work.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StepProgress } from '../../../src/service/training/trainer';
import { startEngine, type TestEngine } from '../api/engine-fixture';
import { eventTypes, modelAndJob, recordingTrainer } from './job-fixture';

const disk = { full: false };
for (const method of ['put', 'add'] as const) {
  const original = IDBObjectStore.prototype[method];
  IDBObjectStore.prototype[method] = function (this: IDBObjectStore, ...args: Parameters<typeof original>) {
    if (disk.full) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    return original.apply(this, args);
  };
}
afterEach(() => {
  disk.full = false;
});

const STORAGE_FULL = /storage quota for this site is exhausted/;

const progress = (stepsDone: number): StepProgress => ({
  stepsDone,
  adapter: new Uint8Array(256).buffer,
  optimizer: new Uint8Array(512).buffer,
  optimizerStep: stepsDone,
  precomputed: null,
});

/** Resolves when the trainer reached it; the trainer goes on when `release` is called. */
function gate(): { reached: Promise<void>; wait: () => Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (release = r));
  return { reached: reachedP, wait: () => (reached(), released), release };
}

async function readJob(e: TestEngine, jobId: string, key?: string) {
  return (await e.call('GET', `/v1/preview/training-jobs/${jobId}`, { key })).json;
}

async function events(e: TestEngine, jobId: string, key?: string): Promise<{ id: string; type: string; data: any }[]> {
  return (await e.call('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`, { key })).json.data;
}

/** Waits (up to 10 s: the first retry comes after 1 s) until the store holds the job FAILED. */
async function storedFailed(e: TestEngine, jobId: string) {
  await vi.waitFor(async () => expect((await e.db.get('trainingJobs', jobId))?.status).toBe('FAILED'), { timeout: 10_000, interval: 100 });
  return (await e.db.get('trainingJobs', jobId))!;
}

describe('a training job when storage is full', () => {
  it('reads FAILED at once when not even its end fits, and is stored so once space frees', async () => {
    const paused = gate();
    const trainer = recordingTrainer(async (ctx) => {
      await ctx.started(2);
      await ctx.gradientStep({ loss: 1 }, progress(1));
      await paused.wait();
      // The disk fills up between two steps: the next save fails, and so does every end.
      disk.full = true;
      await ctx.gradientStep({ loss: 0.5 }, progress(2));
    });
    const e = await startEngine({ trainer });
    const { jobId: running } = await modelAndJob(e);
    await paused.reached;
    const { jobId: queued } = await modelAndJob(e);
    paused.release();
    await e.runner.idle();

    const job = await readJob(e, running);
    expect(job).toMatchObject({ status: 'FAILED', error_message: expect.stringMatching(STORAGE_FULL) });
    expect(job.training_end).not.toBeNull();
    const shown = await events(e, running);
    expect(shown.map((ev) => ev.type)).toEqual(['training_started', 'gradient_step', 'training_failed']);
    expect(shown[2].data.error_message).toBe(job.error_message);
    // Paging past the last stored event reaches the end too, and nothing after it.
    const tail = await e.call('GET', `/v1/preview/training-jobs/${running}/events?after=${shown[1].id}&limit=1`);
    expect(tail.json).toMatchObject({ data: [{ id: shown[2].id }], has_more: false });
    const after = await e.call('GET', `/v1/preview/training-jobs/${running}/events?after=${shown[2].id}`);
    expect(after.json).toMatchObject({ data: [], has_more: false });
    // The job queued behind it could not even start: it failed too, and never ran.
    expect(await readJob(e, queued)).toMatchObject({ status: 'FAILED', error_message: expect.stringMatching(STORAGE_FULL) });
    expect(await eventTypes(e, queued)).toEqual(['training_failed']);
    expect(trainer.seen).toEqual([running]);
    const list = (await e.call('GET', '/v1/preview/training-jobs')).json.data as { id: string; status: string }[];
    expect(list.map((j) => j.status)).toEqual(['FAILED', 'FAILED']);
    expect((await e.call('GET', '/v1/preview/engine')).json.jobs).toMatchObject({ pending: 0, running: null, training: false });
    // Nothing of it fitted: the store still says RUNNING, and the job's progress was freed.
    expect((await e.db.get('trainingJobs', running))?.status).toBe('RUNNING');
    expect(await e.db.get('jobProgress', running)).toBeUndefined();

    disk.full = false;
    const stored = await storedFailed(e, running);
    expect(stored).toMatchObject({ errorMessage: job.error_message, trainingEnd: Date.parse(job.training_end) });
    expect((await storedFailed(e, queued)).errorMessage).toMatch(STORAGE_FULL);
    // What a client read before is what is stored: the same events, the same ids.
    expect(await events(e, running)).toEqual(shown);
    await e.close();
  });

  it('is failed by the next engine start when the engine stopped before its end fitted', async () => {
    const trainer = recordingTrainer(async (ctx) => {
      await ctx.started(1);
      disk.full = true;
      await ctx.gradientStep({ loss: 1 }, progress(1));
    }, true);
    const first = await startEngine({ trainer });
    const { jobId } = await modelAndJob(first);
    await first.runner.idle();
    const before = await readJob(first, jobId);
    expect(before.status).toBe('FAILED');
    first.runner.stop();
    first.db.close();

    // Still full when the next engine starts: the job reads FAILED there too, never resumed.
    const resumer = recordingTrainer(async (ctx) => ctx.started(0), true);
    const second = await startEngine({ dbName: first.db.name, trainer: resumer });
    await second.runner.idle();
    expect(resumer.seen).toEqual([]);
    expect(await readJob(second, jobId, first.adminKey)).toMatchObject({ status: 'FAILED', error_message: before.error_message });
    expect((await events(second, jobId, first.adminKey)).map((ev) => ev.type)).toEqual(['training_started', 'training_failed']);

    disk.full = false;
    expect((await storedFailed(second, jobId)).errorMessage).toBe(before.error_message);
    await second.close();
  });

  it('fails the queued jobs of a revoked key even when storage is full', async () => {
    const paused = gate();
    const trainer = recordingTrainer(async (ctx) => {
      await ctx.started(0);
      await paused.wait();
    });
    const e = await startEngine({ trainer });
    const { jobId: running } = await modelAndJob(e);
    await paused.reached;
    const made = (await e.call('POST', '/v1/preview/api-keys', { body: { name: 'leaving' } })).json;
    const { jobId: queued } = await modelAndJob(e, made.key);

    disk.full = true;
    // Revoking deletes the key (no quota needed) and ends its principal's queued job.
    expect((await e.call('DELETE', `/v1/preview/api-keys/${made.id}`)).status).toBe(200);
    disk.full = false;
    paused.release();
    await e.runner.idle();
    expect(trainer.seen).toEqual([running]);
    expect((await storedFailed(e, queued)).errorMessage).toMatch(STORAGE_FULL);
    await e.close();
  });
});
