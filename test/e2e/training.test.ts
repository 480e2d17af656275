// Training for real in the browser: page fetch -> Service Worker -> engine worker (WebGPU on
// SwiftShader here) -> IndexedDB, with ART-shaped bodies and ART's polling loop. An SFT job from an
// uploaded artifact lowers the loss on its data and raises accuracy on held-out prompts; the
// checkpoint is served by chat right after training_ended and downloads as a PEFT zip; RL jobs on
// the demo task raise the mean reward; a job whose hosting tab closes is resumed by the next tab.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messages, problems, reward, type AdditionProblem } from '../../src/demo/addition';
import { api, openApp, startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

const call = (method: string, path: string, body?: unknown, page = h.page) => api(page, method, path, { key: h.key, body });

async function register(name: string): Promise<{ id: string; entity: string; project: string; name: string }> {
  const r = await call('POST', '/v1/preview/models', {
    entity: null,
    project: 'e2e-train',
    name,
    base_model: 'hearth/tiny-chat',
    return_existing: true,
  });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** ART's polling loop (docs/reference/art-compat.md §1.8): every event type in order, and the gradient steps' data. */
async function pollJob(jobId: string, page = h.page): Promise<{ types: string[]; steps: Record<string, number>[]; started: number }> {
  const types: string[] = [];
  const steps: Record<string, number>[] = [];
  let after: string | undefined;
  let started = -1;
  for (let i = 0; i < 600; i++) {
    const page_ = await call('GET', `/v1/preview/training-jobs/${jobId}/events${after ? `?after=${after}` : ''}`, undefined, page);
    for (const e of page_.json.data) {
      if (e.type === 'training_started') {
        if (started < 0) types.push(e.type);
        started = e.data.num_sequences;
        continue; // ART does not advance `after` here
      }
      types.push(e.type);
      if (e.type === 'training_failed') throw new Error(`training_failed: ${e.data.error_message}`);
      if (e.type === 'training_ended') return { types, steps, started };
      steps.push(e.data);
      after = e.id;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`job ${jobId} did not end`);
}

const latestStep = async (modelId: string) =>
  (await call('GET', `/v1/preview/models/${modelId}/checkpoints?limit=1&order=desc`)).json.data[0].step as number;

async function chat(model: string, content: string, extra: Record<string, unknown> = {}) {
  const r = await call('POST', '/v1/chat/completions', {
    model,
    messages: [{ role: 'user', content }],
    temperature: 0,
    max_tokens: 6,
    ...extra,
  });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

// A skill the bundled model does not have and a few SFT steps can teach: a fixed reply to a family
// of questions. Held-out questions use ticket numbers never trained on. The bundled model is an
// addition specialist (docs/training.md) and very sure of itself: it answers every question with a
// sum of one-digit numbers (at most 18), so "42" is a reply it never gives (held-out accuracy 0
// before), yet one made of what it already writes (digits, then the end of its turn): 8.4 nats
// per token on the held-out tickets before, 0.08 after 16 LoRA steps in Node. A word like "open" sits
// 16 nats deep per token and needs far more steps than a test can afford.
const ticket = (n: number) => `Ticket ${n}: status?`;
const TRAIN_TICKETS = Array.from({ length: 48 }, (_, i) => 100 + 7 * i);
const HELD_TICKETS = [901, 913, 927, 940];
const REPLY = '42';
// One learning rate per batch (ART's list form): 1e-2 for two thirds of the steps, then down to
// 2e-3 so the last updates settle instead of bouncing around the fitted reply.
const SFT_SCHEDULE = Array.from({ length: 24 }, (_, i) => (i < 16 ? 1e-2 : 1e-2 * (1 - 0.1 * (i - 15))));
const sftLines = (tickets: number[]) =>
  tickets
    .map((n) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: ticket(n) },
          { role: 'assistant', content: REPLY },
        ],
      }),
    )
    .join('\n');

describe('training through the Service Worker', () => {
  let sftModel: { id: string; entity: string; project: string; name: string };
  let sftAttempt = 0;

  // Limits are long: SwiftShader compiles each training and decode pipeline on first use.
  // Three retries: each job draws its LoRA initialisation and step order from its random id, and
  // training in Chromium on SwiftShader is not bit-identical from run to run (docs/training.md). With
  // some draws the 24 steps learn the reply but not where it ends, so the held-out check fails
  // (replies "42 | 442 | 2 | 2", "4 | 4 | 4 | 4", "422222" x 4) while the loss check passes: a third to
  // a half of the attempts over two sessions' full runs. A job that does not learn fails all four.
  it(
    'SFT from an uploaded artifact: ART event order, lower loss on its data, higher held-out accuracy, served at once',
    { timeout: 1_200_000, retry: 3 },
    async () => {
      sftModel = await register(sftAttempt++ === 0 ? 'sft' : `sft-retry-${sftAttempt}`);
      const name = (step: number) => `${sftModel.entity}/${sftModel.project}/${sftModel.name}:step${step}`;
      const replies = async (model: string) =>
        Promise.all(HELD_TICKETS.map(async (n) => (await chat(model, ticket(n))).choices[0].message.content.trim()));
      const accuracy = (texts: string[]) => texts.filter((t) => t === REPLY).length / texts.length;
      const before = accuracy(await replies(name(0)));

      const lines = sftLines(TRAIN_TICKETS);
      const upload = await h.page.evaluate(
        async ({ key, modelId, lines }) => {
          const form = new FormData();
          form.append('model_id', modelId);
          form.append('file', new File([lines], 'train.jsonl'));
          const res = await fetch('/v1/preview/artifacts', { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
          return { status: res.status, json: await res.json() };
        },
        { key: h.key, modelId: sftModel.id, lines },
      );
      expect(upload.status).toBe(200);
      const job = await call('POST', '/v1/preview/sft-training-jobs', {
        model_id: sftModel.id,
        training_data_url: upload.json.url,
        config: { batch_size: 2, learning_rate: SFT_SCHEDULE },
      });
      expect(job.status, job.text).toBe(200);
      const run = await pollJob(job.json.id);
      expect(run.started).toBe(24);
      expect(run.steps.map((s) => s.learning_rate)).toEqual(SFT_SCHEDULE);
      expect(run.types).toEqual(['training_started', ...Array(24).fill('gradient_step'), 'training_ended']);
      // Each step's loss is measured before its update, on examples of one kind: the last four
      // steps' loss is far below the first four's (a job that does not learn stays near its first
      // loss, since the model never gives this reply).
      const losses = run.steps.map((s) => s.loss);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      expect(mean(losses.slice(20)), `losses ${losses.map((l) => l.toFixed(3)).join(', ')}`).toBeLessThan(0.3 * mean(losses.slice(0, 4)));
      expect(await latestStep(sftModel.id)).toBe(1);

      // Served right after training_ended, by the unsuffixed (latest) name too: the same replies as
      // :step1, which differ from step 0's (that never gives this reply).
      const trained = await replies(name(1));
      const after = accuracy(trained);
      expect(after, `replies ${trained.join(' | ')}`).toBeGreaterThan(before);
      expect(after, `replies ${trained.join(' | ')}`).toBeGreaterThanOrEqual(0.5);
      expect(await replies(`${sftModel.entity}/${sftModel.project}/${sftModel.name}`)).toEqual(trained);
    },
  );

  it('downloads the checkpoint as a PEFT zip', async () => {
    const zip = await h.page.evaluate(
      async ({ key, modelId }) => {
        const res = await fetch(`/v1/preview/models/${modelId}/checkpoints/1/adapter`, { headers: { Authorization: `Bearer ${key}` } });
        const bytes = new Uint8Array(await res.arrayBuffer());
        return {
          status: res.status,
          type: res.headers.get('content-type'),
          head: Array.from(bytes.slice(0, 4)),
          text: new TextDecoder('latin1').decode(bytes),
        };
      },
      { key: h.key, modelId: sftModel.id },
    );
    expect(zip.status).toBe(200);
    expect(zip.type).toBe('application/zip');
    expect(zip.head).toEqual([0x50, 0x4b, 0x03, 0x04]);
    expect(zip.text).toContain('adapter_config.json');
    expect(zip.text).toContain('adapter_model.safetensors');
    expect(zip.text).toContain('"peft_type": "LORA"');
  });

  it('RL jobs on the demo task raise the mean reward of its rollouts', { timeout: 1_200_000 }, async () => {
    const model = await register('rl');
    const name = (step: number) => `${model.entity}/${model.project}/${model.name}:step${step}`;
    // The nine held-out one-digit pairs, sampled at temperature 1.5: the bundled model (already
    // sharpened by the demo's RL) gives the same answer to every sample of a pair at temperature 1,
    // so every group would have zero advantage; hotter sampling gives each group right and wrong
    // answers for RL to tell apart, and the reward of that policy has room to rise.
    const batch = [...new Map(problems('heldout', 60, 5, { maxDigits: 1 }).map((p) => [`${p.a}+${p.b}`, p])).values()];
    const rollouts = async (step: number, seed: number) =>
      Promise.all(
        batch.map(async (p: AdditionProblem, i) => {
          const r = await call('POST', '/v1/chat/completions', {
            model: name(step),
            messages: messages(p),
            n: 6,
            temperature: 1.5,
            max_tokens: 4,
            seed: seed + i,
            logprobs: true,
            return_tokens_as_token_ids: true,
          });
          expect(r.status, r.text).toBe(200);
          return {
            trajectories: r.json.choices.map((c: any) => ({
              messages_and_choices: [...messages(p), c],
              reward: reward(p, c.message.content ?? ''),
            })),
          };
        }),
      );
    const meanReward = (groups: { trajectories: { reward: number }[] }[]) => {
      const all = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
      return all.reduce((a, b) => a + b, 0) / all.length;
    };
    const RL_ROUNDS = 4;
    const first = await rollouts(0, 1000);
    let groups = first;
    for (let round = 0; round < RL_ROUNDS; round++) {
      const job = await call('POST', '/v1/preview/training-jobs', {
        model_id: model.id,
        trajectory_groups: groups,
        experimental_config: { learning_rate: 2e-3, ppo: null, epsilon: null, scale_rewards: true, precalculate_logprobs: false },
      });
      expect(job.status, job.text).toBe(200);
      const run = await pollJob(job.json.id);
      expect(run.types[0]).toBe('training_started');
      expect(run.steps.length).toBe(run.started);
      for (const s of run.steps)
        expect(Object.keys(s)).toEqual(
          expect.arrayContaining(['loss', 'policy_loss', 'grad_norm', 'learning_rate', 'num_trainable_tokens']),
        );
      groups = await rollouts(round + 1, 2000 + 100 * round);
    }
    expect(await latestStep(model.id)).toBe(RL_ROUNDS);
    // The same prompts and sampling seeds before and after: the trained policy earns more (measured
    // 0.637 -> 0.728 and 0.741 in two runs of 4 rounds at lr 2e-3; at 5e-3 one run fell to 0.489).
    const [before, after] = [meanReward(first), meanReward(await rollouts(RL_ROUNDS, 1000))];
    expect(after, `mean reward ${before.toFixed(3)} -> ${after.toFixed(3)}`).toBeGreaterThan(before + 0.02);
  });

  it('resumes a job whose hosting tab closed, in the tab that takes over', { timeout: 1_200_000 }, async () => {
    const model = await register('resume');
    h.server.files.set('/e2e-train/resume.jsonl', { type: 'application/jsonl', body: sftLines(TRAIN_TICKETS.slice(0, 32)) });
    const other = await openApp(h.context, h.server);
    const job = await call('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: '/e2e-train/resume.jsonl',
      config: { batch_size: 2, learning_rate: 1e-3 },
    });
    expect(job.status, job.text).toBe(200);
    // Close the host once the job has made progress; the other tab takes the engine over.
    for (let i = 0; i < 400; i++) {
      const events = await call('GET', `/v1/preview/training-jobs/${job.json.id}/events`);
      if (events.json.data.filter((e: { type: string }) => e.type === 'gradient_step').length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await h.page.close();
    h.page = other;
    const run = await pollJob(job.json.id, other);
    expect(run.started).toBe(16);
    expect(run.types.filter((t) => t === 'gradient_step')).toHaveLength(16);
    expect(run.types.at(-1)).toBe('training_ended');
    expect((await call('GET', `/v1/preview/training-jobs/${job.json.id}`)).json.status).toBe('COMPLETED');
    expect(await latestStep(model.id)).toBe(1);
  });
});
