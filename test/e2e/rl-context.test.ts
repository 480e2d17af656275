// RL trains on the context that was sampled (issue 16), for real in the browser: rollouts through
// /v1/chat/completions, then one PPO step from the identity adapter, with the Choices as the API
// returned them (token_id:N logprob tokens) and with ART's era-d prompt_token_ids + token_ids copied
// in. On-policy means the trainer's logprob of every sampled token equals the sampler's
// (gradient_step's max_ratio_deviation = max |rho - 1| below 1e-4), so PPO's loss is exactly
// -sum_t A_t w_t / N, the job's normalised advantages (docs/reference/art-compat.md §3.1, §3.3) with rho = 1.
// Before issue 16 the trainer re-rendered a Qwen3 reply after `<think>\n\n</think>\n\n`, which it
// was never sampled after: max |rho - 1| was 0.41 on tiny-qwen3 and policy_loss -0.0082 for 0.
// What is left on-policy is f32 rounding between the sampler's decode path and the trainer's
// forward, and it grows with the size of the logits: 2.9e-6 on tiny-qwen3 (random weights),
// 3.1e-5 on tiny-chat's stage-3 weights (top logit about 9 on these prompts); the bound keeps a
// 3x margin over that. The JSON stage's sharper weights (about 16; docs/training.md "Stage 4")
// gave 1.02e-4 while tiny-chat carried them; since issue 27 they are hearth/tiny-json, which this
// test does not train.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startHearth, type Hearth } from './harness';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
});
afterAll(async () => {
  await h?.close();
});

const call = (method: string, path: string, body?: unknown) => api(h.page, method, path, { key: h.key, body });

async function register(base: string, name: string): Promise<{ id: string; entity: string; project: string; name: string }> {
  const r = await call('POST', '/v1/preview/models', {
    entity: null,
    project: 'e2e-rl-context',
    name,
    base_model: base,
    return_existing: true,
  });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The job's training_started data and gradient_step data, once it ended (ART's polling order). */
async function runJob(jobId: string): Promise<{ started: Record<string, number>; steps: Record<string, number>[] }> {
  for (let i = 0; i < 2400; i++) {
    const events = (await call('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`)).json.data as { type: string; data: any }[];
    const failed = events.find((e) => e.type === 'training_failed');
    if (failed) throw new Error(`training_failed: ${failed.data.error_message}`);
    if (events.some((e) => e.type === 'training_ended')) {
      return {
        started: events.find((e) => e.type === 'training_started')!.data,
        steps: events.filter((e) => e.type === 'gradient_step').map((e) => e.data),
      };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`job ${jobId} did not end`);
}

type Choice = { message: { content: string | null }; logprobs: { content: unknown[] }; token_ids?: number[]; prompt_token_ids?: number[] };

const PROMPTS = ['Name a colour.', 'Count to three.'];
const REWARDS = [0, 1, 0.25, 2];
// advantage_balance halves the negative advantages, so the on-policy loss is not 0 by symmetry.
const BALANCE = 0.5;

/** 2 groups x 4 Choices sampled by step 0 of `model`, with the response's token ids. */
async function rollouts(model: string): Promise<{ content: string; choices: Choice[]; promptIds: number[] }[]> {
  return Promise.all(
    PROMPTS.map(async (content, i) => {
      const r = await call('POST', '/v1/chat/completions', {
        model,
        messages: [{ role: 'user', content }],
        n: 4,
        temperature: 1,
        max_tokens: 8,
        seed: 7 + i,
        logprobs: true,
        return_tokens_as_token_ids: true,
        return_token_ids: true,
      });
      expect(r.status, r.text).toBe(200);
      return { content, choices: r.json.choices, promptIds: r.json.prompt_token_ids };
    }),
  );
}

/** The PPO loss of an on-policy step (rho = 1) over these groups, as ART normalises (no zero-advantage group here). */
function onPolicyLoss(tokenCounts: number[][]): number {
  const mean = REWARDS.reduce((a, b) => a + b, 0) / REWARDS.length;
  const std = Math.sqrt(REWARDS.reduce((a, r) => a + (r - mean) ** 2, 0) / REWARDS.length);
  const balanced = (a: number) => (a < 0 ? a * (1 - BALANCE) : a);
  const items = tokenCounts.flatMap((counts) =>
    counts.map((n, i) => ({ n, a: balanced((REWARDS[i] - mean) / (std + 1e-6)), w: 1 / (n + 1e-6) })),
  );
  const N = items.reduce((s, t) => s + t.n, 0);
  const meanW = items.reduce((s, t) => s + t.n * t.w, 0) / N;
  const meanAbs = items.reduce((s, t) => s + t.n * Math.abs(t.a) * (t.w / meanW), 0) / N;
  return -items.reduce((s, t) => s + t.n * (t.a / meanAbs) * (t.w / meanW), 0) / (N + 1e-6);
}

describe.each([
  ['hearth/tiny-qwen3', 'qwen3'],
  ['hearth/tiny-chat', 'llama'],
])('one PPO step on %s trains on the sampled context', (base, tag) => {
  it.each([
    ['as returned (token_id:N logprobs)', false],
    ['with prompt_token_ids and token_ids', true],
  ])('Choices %s: on-policy ratio and loss', { timeout: 900_000 }, async (_label, withIds) => {
    const model = await register(base, `${tag}-${withIds ? 'ids' : 'plain'}`);
    const groups = await rollouts(`${model.entity}/${model.project}/${model.name}:step0`);
    const trajectoryGroups = groups.map((g) => ({
      trajectories: g.choices.map((c, i) => {
        const { token_ids, prompt_token_ids: _none, ...plain } = c;
        const choice = withIds ? { ...plain, token_ids, prompt_token_ids: g.promptIds } : plain;
        return { messages_and_choices: [{ role: 'user', content: g.content }, choice], reward: REWARDS[i] };
      }),
    }));
    const job = await call('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: trajectoryGroups,
      experimental_config: {
        learning_rate: 1e-3,
        ppo: true,
        scale_rewards: true,
        advantage_balance: BALANCE,
        precalculate_logprobs: false,
      },
    });
    expect(job.status, job.text).toBe(200);
    const run = await runJob(job.json.id);
    expect(run.started.num_sequences).toBe(1);
    const [step] = run.steps;
    const expected = onPolicyLoss(groups.map((g) => g.choices.map((c) => c.logprobs.content.length)));
    expect(step.num_trainable_tokens).toBe(groups.reduce((s, g) => s + g.choices.reduce((a, c) => a + c.logprobs.content.length, 0), 0));
    // Printed for the closing note (issue 16 asks for the measured max |rho - 1|).
    console.log(
      `${base}, ${withIds ? 'with ids' : 'as returned'}: max |rho - 1| ${step.max_ratio_deviation}, policy_loss ${step.policy_loss} (on-policy ${expected})`,
    );
    expect(step.max_ratio_deviation, `max |rho - 1| = ${step.max_ratio_deviation}`).toBeLessThan(1e-4);
    expect(Math.abs(step.policy_loss - expected), `policy_loss ${step.policy_loss}, on-policy ${expected}`).toBeLessThan(1e-5);
    expect(run.started.num_choices_not_reproduced).toBe(0);
  });
});
