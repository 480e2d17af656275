// The training-job state machine and the job runner: transitions, ART's event-order rules,
// queue order, recovery of jobs a dead host left RUNNING, and the trainer plug-in contract.
import { describe, expect, it } from 'vitest';
import { updateJob } from '../../../src/store/training-jobs';
import { TRAINING_UNAVAILABLE } from '../../../src/service/training/default-trainer';
import { INTERRUPTED_MESSAGE } from '../../../src/service/training/runner';
import { IllegalTransitionError, isTerminal, JobProgress, nextStatus } from '../../../src/service/training/state-machine';
import { startEngine } from '../api/engine-fixture';
import { eventTypes, modelAndJob, recordingTrainer } from './job-fixture';

describe('nextStatus', () => {
  it('allows PENDING -> RUNNING -> COMPLETED | FAILED and PENDING -> FAILED', () => {
    expect(nextStatus('PENDING', 'start')).toBe('RUNNING');
    expect(nextStatus('RUNNING', 'complete')).toBe('COMPLETED');
    expect(nextStatus('RUNNING', 'fail')).toBe('FAILED');
    expect(nextStatus('PENDING', 'fail')).toBe('FAILED');
  });

  it('refuses every other transition', () => {
    expect(() => nextStatus('PENDING', 'complete')).toThrow(IllegalTransitionError);
    expect(() => nextStatus('RUNNING', 'start')).toThrow(IllegalTransitionError);
    for (const done of ['COMPLETED', 'FAILED'] as const) {
      expect(isTerminal(done)).toBe(true);
      for (const t of ['start', 'complete', 'fail'] as const) expect(() => nextStatus(done, t)).toThrow(IllegalTransitionError);
    }
  });
});

describe('JobProgress', () => {
  it('needs training_started with num_sequences before any gradient_step', () => {
    const p = new JobProgress();
    expect(() => p.record('gradient_step', { loss: 1 })).toThrow(/before training_started/);
    expect(() => p.record('training_started', {})).toThrow(/num_sequences/);
    p.record('training_started', { num_sequences: 2 });
    expect(() => p.record('training_started', { num_sequences: 2 })).toThrow(/already/);
    p.record('gradient_step', { loss: 0.5, grad_norm: 1 });
    expect(p.gradientSteps).toBe(1);
  });

  it('accepts only flat finite numbers in gradient_step data', () => {
    const p = new JobProgress();
    p.record('training_started', { num_sequences: 1 });
    expect(() => p.record('gradient_step', { loss: null })).toThrow(/finite number/);
    expect(() => p.record('gradient_step', { loss: Number.NaN })).toThrow(/finite number/);
    expect(() => p.record('gradient_step', { nested: { a: 1 } })).toThrow(/finite number/);
  });

  it('allows nothing after the terminal event', () => {
    const p = new JobProgress();
    p.record('training_started', { num_sequences: 0 });
    p.record('training_ended', {});
    expect(() => p.record('gradient_step', { loss: 1 })).toThrow(/terminal/);
  });
});

describe('JobRunner with the default trainer', () => {
  it('ends a job with training_started then training_failed saying training is unavailable', async () => {
    const e = await startEngine();
    const { jobId } = await modelAndJob(e);
    await e.runner.idle();
    const job = await e.call('GET', `/v1/preview/training-jobs/${jobId}`);
    expect(job.json.status).toBe('FAILED');
    expect(job.json.error_message).toBe(TRAINING_UNAVAILABLE);
    expect(job.json.training_start).not.toBeNull();
    expect(job.json.training_end).not.toBeNull();
    expect(await eventTypes(e, jobId)).toEqual(['training_started', 'training_failed']);
    await e.close();
  });
});

const adapter = { adapterConfig: new TextEncoder().encode('{"r":8}'), adapterModel: new Uint8Array([1, 2, 3, 4]) };

describe('JobRunner with a trainer', () => {
  it('completes a job: started, gradient steps, checkpoint registered before training_ended', async () => {
    const trainer = recordingTrainer(async (ctx) => {
      expect(ctx.job.status).toBe('RUNNING');
      expect(ctx.input.kind).toBe('rl');
      expect(ctx.baseModel?.id).toBe('hearth/tiny-chat');
      expect(ctx.latestCheckpoint?.step).toBe(0);
      await ctx.started(2);
      await ctx.gradientStep({ loss: 0.7, grad_norm: 1.5 });
      await ctx.gradientStep({ loss: 0.6, grad_norm: 1.2 });
      const checkpoint = await ctx.registerCheckpoint(adapter, { 'train/loss': 0.65 });
      expect(checkpoint.step).toBe(1);
    });
    const e = await startEngine({ trainer });
    const { modelId, jobId } = await modelAndJob(e);
    await e.runner.idle();
    expect(await eventTypes(e, jobId)).toEqual(['training_started', 'gradient_step', 'gradient_step', 'training_ended']);
    const job = await e.call('GET', `/v1/preview/training-jobs/${jobId}`);
    expect(job.json).toMatchObject({ status: 'COMPLETED', error_message: null });
    const latest = await e.call('GET', `/v1/preview/models/${modelId}/checkpoints?limit=1&order=desc`);
    expect(latest.json.data[0]).toMatchObject({ step: 1, metrics: { 'train/loss': 0.65 } });
    await e.close();
  });

  it('fails a job whose trainer breaks the event order, with the reason', async () => {
    const e = await startEngine({ trainer: recordingTrainer(async (ctx) => ctx.gradientStep({ loss: 1 })) });
    const { jobId } = await modelAndJob(e);
    await e.runner.idle();
    const job = await e.call('GET', `/v1/preview/training-jobs/${jobId}`);
    expect(job.json.status).toBe('FAILED');
    expect(job.json.error_message).toMatch(/gradient_step before training_started/);
    expect(await eventTypes(e, jobId)).toEqual(['training_failed']);
    await e.close();
  });

  it('runs jobs one at a time in the order they were created', async () => {
    let running = 0;
    let maxRunning = 0;
    const trainer = recordingTrainer(async (ctx) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await ctx.started(0);
      await new Promise((r) => setTimeout(r, 5));
      running -= 1;
    });
    const e = await startEngine({ trainer });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await modelAndJob(e)).jobId);
    await e.runner.idle();
    expect(trainer.seen).toEqual(ids);
    expect(maxRunning).toBe(1);
    await e.close();
  });

  it('stops a running job when its model is deleted, leaving nothing behind', async () => {
    let release!: () => void;
    const entered = new Promise<void>((resolve) => (release = resolve));
    let signalAborted = false;
    const trainer = recordingTrainer(async (ctx) => {
      await ctx.started(1);
      release();
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      signalAborted = ctx.signal.aborted;
      await ctx.registerCheckpoint(adapter);
    });
    const e = await startEngine({ trainer });
    const { modelId, jobId } = await modelAndJob(e);
    await entered;
    expect((await e.call('DELETE', `/v1/preview/models/${modelId}`)).status).toBe(200);
    await e.runner.idle();
    expect(signalAborted).toBe(true);
    expect((await e.call('GET', `/v1/preview/training-jobs/${jobId}`)).status).toBe(404);
    expect(await e.db.count('checkpoints')).toBe(0);
    expect(await e.db.count('jobEvents')).toBe(0);
    await e.close();
  });
});

describe('JobRunner after the engine host died', () => {
  it('fails a job found RUNNING at start when the trainer cannot resume, and runs PENDING ones', async () => {
    const first = await startEngine({ trainer: recordingTrainer(async () => new Promise<void>(() => {})) });
    const dbName = first.db.name;
    const { jobId: stuck } = await modelAndJob(first);
    // Let the runner mark it RUNNING, then "kill the host": close without finishing the job.
    await new Promise((r) => setTimeout(r, 50));
    expect((await first.call('GET', `/v1/preview/training-jobs/${stuck}`)).json.status).toBe('RUNNING');
    const { jobId: queued } = await modelAndJob(first);
    first.runner.stop();
    first.db.close();

    const trainer = recordingTrainer(async (ctx) => ctx.started(0));
    const second = await startEngine({ dbName, trainer });
    await second.runner.idle();
    const s = await second.call('GET', `/v1/preview/training-jobs/${stuck}`, { key: first.adminKey });
    expect(s.json).toMatchObject({ status: 'FAILED', error_message: INTERRUPTED_MESSAGE });
    expect((await second.call('GET', `/v1/preview/training-jobs/${queued}`, { key: first.adminKey })).json.status).toBe('COMPLETED');
    expect(trainer.seen).toEqual([queued]);
    await second.close();
  });

  it('hands a RUNNING job back with resumed: true when the trainer resumes', async () => {
    const first = await startEngine({ trainer: recordingTrainer(async () => new Promise<void>(() => {})) });
    const dbName = first.db.name;
    const { jobId } = await modelAndJob(first);
    await new Promise((r) => setTimeout(r, 50));
    first.runner.stop();
    first.db.close();

    let resumed: boolean | undefined;
    const trainer = recordingTrainer(async (ctx) => {
      resumed = ctx.resumed;
      await ctx.started(0);
    }, true);
    const second = await startEngine({ dbName, trainer });
    await second.runner.idle();
    expect(resumed).toBe(true);
    expect((await second.call('GET', `/v1/preview/training-jobs/${jobId}`)).json.status).toBe('COMPLETED');
    await second.close();
  });

  it('the store refuses a status change from an unexpected status', async () => {
    const e = await startEngine();
    const { jobId } = await modelAndJob(e);
    await e.runner.idle();
    await expect(updateJob(e.db, jobId, ['RUNNING'], { status: 'COMPLETED' }, [])).rejects.toThrow(/is FAILED, expected RUNNING/);
    await e.close();
  });
});
