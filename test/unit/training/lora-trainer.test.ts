// The Trainer plugged into the real job runner, API and store (fake-indexeddb), on the CPU
// reference training engine: ART's event order, checkpoints chat can load, SFT loss falling,
// nothing-trainable jobs, and a job resumed after its host died giving exactly the adapter of
// an uninterrupted run.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { parseAdapterConfig, parseAdapterModel } from '../../../src/service/adapters/parse';
import { LoraTrainer } from '../../../src/service/training/lora-trainer';
import type { Trainer } from '../../../src/service/training/trainer';
import { ALL_STORES } from '../../../src/store/schema';
import { openHearthDb } from '../../../src/store/open-db';
import { startEngine, type TestEngine } from '../api/engine-fixture';
import { choice, bundledTokenizer } from './fixtures';
import { ReferenceTrainingEngine, servedFor, tinyTrainModel } from './reference-engine';

const chat = bundledTokenizer('tiny-chat');
const model = tinyTrainModel();

function trainer(opts: { hangAfterStep?: number } = {}): LoraTrainer {
  let steps = 0;
  return new LoraTrainer({
    inference: async () => servedFor(model),
    training: async () => new ReferenceTrainingEngine(model),
    stepTokens: 64,
    yieldBetweenSteps: () => (++steps === opts.hangAfterStep ? new Promise<void>(() => {}) : Promise.resolve()),
  });
}

async function register(e: TestEngine, name = 'm') {
  const r = await e.call('POST', '/v1/preview/models', {
    body: { entity: null, project: 'p', name, base_model: 'hearth/tiny-chat', return_existing: true },
  });
  expect(r.status).toBe(200);
  return r.json.id as string;
}

function group(rewards: number[], question = 'What is 2 + 3?') {
  return {
    trajectories: rewards.map((reward, i) => ({
      messages_and_choices: [{ role: 'user', content: question }, choice(chat, String(4 + i))],
      reward,
    })),
  };
}

async function events(e: TestEngine, jobId: string) {
  const r = await e.call('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`);
  return r.json.data as { type: string; data: Record<string, unknown> }[];
}

async function checkpoints(e: TestEngine, modelId: string) {
  return (await e.call('GET', `/v1/preview/models/${modelId}/checkpoints`)).json.data as { step: number }[];
}

// Real (CPU) training: generous limits, the machine's cores are shared.
describe('LoraTrainer in the job runner', { timeout: 60_000 }, () => {
  it('RL: started{num_sequences}, one numeric gradient_step per step, checkpoint step 1 in PEFT layout, then ended', async () => {
    const e = await startEngine({ trainer: trainer() });
    const modelId = await register(e);
    const groups = [group([1, 0, 0.5]), group([0, 1], 'What is 7 + 1?'), group([1, 1])];
    const job = await e.call('POST', '/v1/preview/training-jobs', {
      body: { model_id: modelId, trajectory_groups: groups, experimental_config: { learning_rate: 1e-2, ppo: null } },
    });
    expect(job.status).toBe(200);
    await e.runner.idle();
    const ev = await events(e, job.json.id);
    const n = ev[0].data.num_sequences as number;
    expect(ev.map((x) => x.type)).toEqual(['training_started', ...Array(n).fill('gradient_step'), 'training_ended']);
    expect(n).toBeGreaterThan(1); // 4 trainable trajectories packed 64 tokens per step
    expect(ev[0].data.num_choices_not_reproduced).toBe(0);
    for (const step of ev.slice(1, -1)) {
      for (const v of Object.values(step.data)) expect(Number.isFinite(v)).toBe(true);
      expect(Object.keys(step.data)).toEqual(
        expect.arrayContaining([
          'loss',
          'policy_loss',
          'grad_norm',
          'learning_rate',
          'num_trainable_tokens',
          'tokens_per_second',
          'entropy',
          'max_ratio_deviation',
        ]),
      );
    }
    expect((await checkpoints(e, modelId)).map((c) => c.step)).toEqual([0, 1]);
    const files = await e.services.db.getAll('checkpointFiles');
    const config = JSON.parse(new TextDecoder().decode(files.find((f) => f.name === 'adapter_config.json')!.bytes));
    expect(parseAdapterConfig(config)).toEqual({
      rank: 8,
      alpha: 16,
      targetModules: expect.arrayContaining(['q_proj', 'down_proj']),
      useRslora: false,
    });
    const tensors = await parseAdapterModel(new Uint8Array(files.find((f) => f.name === 'adapter_model.safetensors')!.bytes));
    expect(tensors.map((t) => t.name)).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight');
    expect(await e.services.db.count('jobProgress')).toBe(0);
    await e.close();
  });

  it('SFT: batches in file order lower the loss on their data; the next job continues from checkpoint 1', async () => {
    const e = await startEngine({ trainer: trainer() });
    const modelId = await register(e);
    const line = JSON.stringify({
      messages: [
        { role: 'user', content: 'What is 12 + 30?' },
        { role: 'assistant', content: '42' },
      ],
    });
    const url = `data:application/jsonl,${encodeURIComponent(Array(8).fill(line).join('\n'))}`;
    const job = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: { model_id: modelId, training_data_url: url, config: { batch_size: 2, learning_rate: 2e-2 } },
    });
    expect(job.status).toBe(200);
    await e.runner.idle();
    const ev = await events(e, job.json.id);
    expect(ev.map((x) => x.type)).toEqual([
      'training_started',
      'gradient_step',
      'gradient_step',
      'gradient_step',
      'gradient_step',
      'training_ended',
    ]);
    expect(ev[0].data).toEqual({ num_sequences: 4 });
    const losses = ev.slice(1, -1).map((x) => x.data.loss as number);
    expect(losses[3]).toBeLessThan(losses[0] * 0.7);
    expect(ev[1].data.learning_rate).toBe(2e-2);
    // A second job starts from checkpoint 1's adapter: its first loss continues where the first ended.
    const again = await e.call('POST', '/v1/preview/sft-training-jobs', {
      body: { model_id: modelId, training_data_url: url, config: { batch_size: 8, learning_rate: 1e-9 } },
    });
    await e.runner.idle();
    const ev2 = await events(e, again.json.id);
    expect(ev2[1].data.loss as number).toBeLessThan(losses[0] * 0.7);
    expect((await checkpoints(e, modelId)).map((c) => c.step)).toEqual([0, 1, 2]);
    await e.close();
  });

  it('nothing trainable: started with 0 sequences, the step still advances, then ended', async () => {
    const e = await startEngine({ trainer: trainer() });
    const modelId = await register(e);
    const job = await e.call('POST', '/v1/preview/training-jobs', {
      body: { model_id: modelId, trajectory_groups: [group([1, 1]), group([0.5])] },
    });
    await e.runner.idle();
    expect((await events(e, job.json.id)).map((x) => [x.type, x.data])).toEqual([
      ['training_started', { num_sequences: 0, num_choices_not_reproduced: 0 }],
      ['training_ended', {}],
    ]);
    expect((await checkpoints(e, modelId)).map((c) => c.step)).toEqual([0, 1]);
    const tensors = await parseAdapterModel(
      new Uint8Array((await e.services.db.getAll('checkpointFiles')).find((f) => f.name === 'adapter_model.safetensors')!.bytes),
    );
    // A copy of the identity adapter: every B is zero.
    expect(
      tensors.filter((t) => t.name.includes('lora_B')).every((t) => new Float32Array(t.data.slice().buffer).every((x) => x === 0)),
    ).toBe(true);
    await e.close();
  });

  it("precalculate_logprobs replaces the sampler's logprobs with the current policy's before step 1", async () => {
    // The fake sampler logprobs (-0.5) are far from the model's; with a ratio mask of width 1e-4
    // every token's PPO ratio is masked (no gradient) unless the old logprobs are the policy's own.
    const e = await startEngine({ trainer: trainer() });
    const modelId = await register(e);
    const config = { learning_rate: 1e-3, ppo: true, mask_prob_ratio: true, epsilon: 1e-4, epsilon_high: 1e-4 };
    const run = async (precalculate: boolean) => {
      const job = await e.call('POST', '/v1/preview/training-jobs', {
        body: {
          model_id: modelId,
          trajectory_groups: [group([1, 0])],
          experimental_config: { ...config, precalculate_logprobs: precalculate },
        },
      });
      await e.runner.idle();
      return (await events(e, job.json.id)).filter((x) => x.type === 'gradient_step').map((x) => x.data);
    };
    const [without] = await run(false);
    expect(without.grad_norm).toBe(0);
    const [withPre] = await run(true);
    expect(withPre.grad_norm).toBeGreaterThan(0);
    await e.close();
  });

  it('refuses at creation a setting it cannot honour (422 naming it), and takes modelfamily_k2_tau', async () => {
    const e = await startEngine({ trainer: trainer() });
    const modelId = await register(e);
    const refused = await e.call('POST', '/v1/preview/training-jobs', {
      body: { model_id: modelId, trajectory_groups: [group([1, 0])], experimental_config: { kl_penalty_coef: 0.5 } },
    });
    expect(refused.status).toBe(422);
    expect(refused.json.detail[0].loc).toEqual(['body', 'experimental_config', 'kl_penalty_coef']);
    const alias = await e.call('POST', '/v1/preview/training-jobs', {
      body: {
        model_id: modelId,
        trajectory_groups: [group([1, 0])],
        experimental_config: { modelfamily_k2_tau: 0.1, kl_penalty_coef: null },
      },
    });
    expect(alias.status).toBe(200);
    await e.runner.idle();
    expect((await e.call('GET', `/v1/preview/training-jobs/${alias.json.id}`)).json.status).toBe('COMPLETED');
    await e.close();
  });

  it('a job whose host died mid-job resumes after its last saved step and ends exactly as an uninterrupted run', async () => {
    // Host P takes the job and dies before training (its trainer never returns).
    const stuck: Trainer = { resumesInterruptedJobs: true, train: () => new Promise(() => {}) };
    const p = await startEngine({ trainer: stuck });
    const modelId = await register(p);
    const groups = [group([1, 0, 0.5, 0.2]), group([0, 1], 'What is 7 + 1?'), group([0.3, 0.9], 'What is 1 + 1?')];
    const job = await p.call('POST', '/v1/preview/training-jobs', {
      body: { model_id: modelId, trajectory_groups: groups, experimental_config: { learning_rate: 1e-2 } },
    });
    await waitFor(async () => (await p.call('GET', `/v1/preview/training-jobs/${job.json.id}`)).json.status === 'RUNNING');

    // Host A resumes it, completes 2 steps and dies; host B resumes from A's saved progress.
    const a = await startEngine({ trainer: trainer({ hangAfterStep: 2 }), dbName: await copyDb(p, 'a') });
    await waitFor(async () => (await events(a, job.json.id)).filter((x) => x.type === 'gradient_step').length === 2);
    const b = await startEngine({ trainer: trainer(), dbName: await copyDb(a, 'b') });
    await b.runner.idle();
    // Host C runs the same job from P's state without interruption.
    const c = await startEngine({ trainer: trainer(), dbName: await copyDb(p, 'c') });
    await c.runner.idle();

    const evB = await events(b, job.json.id);
    const evC = await events(c, job.json.id);
    expect(evB.map((x) => x.type)).toEqual(evC.map((x) => x.type));
    expect(evB.filter((x) => x.type === 'training_started')).toHaveLength(1);
    expect(evB.slice(1, -1).map((x) => x.data.loss)).toEqual(evC.slice(1, -1).map((x) => x.data.loss));
    const adapterOf = async (e: TestEngine) =>
      new Uint8Array((await e.services.db.getAll('checkpointFiles')).find((f) => f.name === 'adapter_model.safetensors')!.bytes);
    expect(await adapterOf(b)).toEqual(await adapterOf(c));
    expect((await checkpoints(b, modelId)).map((x) => x.step)).toEqual([0, 1]);
    expect((await b.call('GET', `/v1/preview/training-jobs/${job.json.id}`)).json.status).toBe('COMPLETED');
    await Promise.all([b.close(), c.close()]);
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

let copies = 0;
/** A snapshot of an engine's database under a new name: what a new host finds after the old one died. */
async function copyDb(from: TestEngine, tag: string): Promise<string> {
  const name = `${from.services.db.name}-${tag}-${copies++}`;
  const to = await openHearthDb(name);
  for (const store of ALL_STORES) {
    const rows = await from.services.db.getAll(store);
    const tx = to.transaction(store, 'readwrite');
    await Promise.all([...rows.map((r) => tx.store.put(r as never)), tx.done]);
  }
  to.close();
  return name;
}
