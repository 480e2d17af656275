// Shared by the job runner's tests: a model with one RL job through the API, a job's event types,
// and a trainer that records the jobs it sees.
import { expect } from 'vitest';
import type { Trainer, TrainerContext } from '../../../src/service/training/trainer';
import type { TestEngine } from '../api/engine-fixture';

const group = {
  trajectories: [
    { messages_and_choices: [], reward: 1 },
    { messages_and_choices: [], reward: 0 },
  ],
};

/** `key`: whose model and job (default the admin key). */
export async function modelAndJob(e: TestEngine, key?: string): Promise<{ modelId: string; jobId: string }> {
  const model = await e.call('POST', '/v1/preview/models', {
    key,
    body: { project: 'p', name: `m${Math.random()}`.replace('.', ''), base_model: 'hearth/tiny-chat' },
  });
  expect(model.status).toBe(200);
  const job = await e.call('POST', '/v1/preview/training-jobs', { key, body: { model_id: model.json.id, trajectory_groups: [group] } });
  expect(job.status, JSON.stringify(job.json)).toBe(200);
  return { modelId: model.json.id, jobId: job.json.id };
}

export async function eventTypes(e: TestEngine, jobId: string): Promise<string[]> {
  const res = await e.call('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`);
  return res.json.data.map((ev: { type: string }) => ev.type);
}

/** A trainer that records the order it sees jobs in and can be told to block. */
export function recordingTrainer(behaviour: (ctx: TrainerContext) => Promise<void>, resumes = false): Trainer & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    resumesInterruptedJobs: resumes,
    async train(ctx) {
      seen.push(ctx.job.id);
      await behaviour(ctx);
    },
  };
}
