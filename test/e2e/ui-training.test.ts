// Training from the UI as a person does it, in one browser: an SFT job started from a JSONL file
// picked from disk, followed live until it completes with loss points on its chart and a link
// to the checkpoint it made; the job list; then the demo in its short mode: rollouts, rewards,
// an RL job, the reward curve with points, and the before/after chat.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { problems, sftLine } from '../../src/demo/addition';
import { api, startHearth, type Hearth } from './harness';
import { goTo, screenshot } from './ui-helpers';

let h: Hearth;
beforeAll(async () => {
  h = await startHearth();
  await h.page.setViewportSize({ width: 1200, height: 900 });
});
afterAll(async () => {
  await h?.close();
});

const points = (chart: string) =>
  h.page
    .locator(`hearth-line-chart[data-metric="${chart}"]`)
    .first()
    .evaluate((el) => Number((el as HTMLElement).dataset.points ?? 0));

it('runs an SFT job from an uploaded JSONL file and follows it to its checkpoint', { timeout: 600_000 }, async () => {
  const model = await api(h.page, 'POST', '/v1/preview/models', {
    key: h.key,
    body: { entity: null, project: 'ui', name: 'sft-ui', base_model: 'hearth/tiny-chat' },
  });
  expect(model.status).toBe(200);
  await goTo(h.page, 'Training');
  const forms = h.page.locator('hearth-training-forms');
  const sft = forms.locator('form[aria-labelledby="sft"]');
  await sft.getByLabel('Model').selectOption({ label: 'local/ui/sft-ui' });
  const lines = problems('train', 4, 11, { maxDigits: 1 }).map(sftLine).join('\n') + '\n';
  await sft
    .getByLabel('Training data (JSONL)')
    .setInputFiles({ name: 'train.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(lines) });
  await sft.getByLabel('Batch size').fill('2');
  await sft.getByLabel('Learning rate').fill('0.001');
  await sft.getByRole('button', { name: 'Start SFT job' }).click();
  await h.page.waitForURL(/#\/training\/[0-9a-f-]{36}$/);

  const job = h.page.locator('hearth-training-job');
  await job.locator('[data-field="job-status"]', { hasText: 'COMPLETED' }).waitFor({ timeout: 540_000 });
  expect(await points('loss')).toBe(2);
  expect(await points('learning_rate')).toBe(2);
  expect(await job.locator('[data-field="steps"]').innerText()).toBe('2 of 2');
  expect(await job.locator('[data-field="remaining"]').innerText()).toBe('0 s');
  const link = job.locator('[data-field="checkpoint"] a').first();
  await link.waitFor();
  // One job makes one checkpoint, the step after the model's latest (0: the identity adapter).
  expect(await link.innerText()).toBe('local/ui/sft-ui:step1');
  await screenshot(h.page, 'training-job');

  await h.page.getByRole('link', { name: '← All jobs' }).click();
  const row = h.page.locator('hearth-training tr[data-job]').first();
  await row.waitFor();
  expect(await row.innerText()).toMatch(/SFT\s+COMPLETED/);
  await screenshot(h.page, 'training');
});

it('runs the demo: rollouts, rewards and an RL step with the reward curve, then before and after', { timeout: 600_000 }, async () => {
  await goTo(h.page, 'Demo');
  const demo = h.page.locator('hearth-demo');
  await demo.getByLabel('Rounds').fill('1');
  await demo.getByLabel('Problems per round').fill('2');
  await demo.getByLabel('Answers per problem').fill('2');
  await demo.getByRole('button', { name: 'Run the demo' }).click();
  // The reward point arrives with the rollouts, before the RL job ends.
  await h.page.waitForFunction(
    () => {
      const el = document
        .querySelector('hearth-app')
        ?.shadowRoot?.querySelector('hearth-demo')
        ?.shadowRoot?.querySelector('hearth-line-chart[data-metric="reward"]') as HTMLElement | null;
      return Number(el?.dataset.points ?? 0) >= 2;
    },
    undefined,
    { timeout: 300_000 },
  );
  await demo.locator('[data-field="demo-status"]', { hasText: /^Done/ }).waitFor({ timeout: 540_000 });
  const jobs = (await api(h.page, 'GET', '/v1/preview/training-jobs', { key: h.key })).json.data;
  expect(jobs[0]).toMatchObject({ kind: 'rl', status: 'COMPLETED' });
  // The loss chart has one point per gradient step of the RL job (none when every answer of a
  // problem got the same reward: no advantage, nothing to learn).
  const steps = (await api(h.page, 'GET', `/v1/preview/training-jobs/${jobs[0].id}/events`, { key: h.key })).json.data.filter(
    (e: { type: string }) => e.type === 'gradient_step',
  );
  expect(await points('loss')).toBe(steps.length);
  await demo.getByRole('button', { name: 'Ask both' }).click();
  const before = demo.locator('[data-side="before"] .answer');
  const after = demo.locator('[data-side="after"] .answer');
  await h.page.waitForFunction(
    (els) => els.every((e) => e.textContent && e.textContent !== '…'),
    [await before.elementHandle(), await after.elementHandle()],
    { timeout: 120_000 },
  );
  expect(await demo.locator('[data-side="before"] h4').innerText()).toBe('Before (step 0)');
  expect(await demo.locator('[data-side="after"] h4').innerText()).toBe('After (step 1)');
  expect(await demo.locator('.answer.error').count()).toBe(0);
  await screenshot(h.page, 'demo');

  // The run is the demo model's: its reward shows in Runs.
  const models = (await api(h.page, 'GET', '/v1/preview/models?order=desc', { key: h.key })).json.data;
  const demoModel = models.find((m: { project: string }) => m.project === 'demo');
  const run = (await api(h.page, 'GET', `/v1/preview/models/${demoModel.id}/run`, { key: h.key })).json;
  expect(
    run.history.some(
      (e: { split: string; metrics: Record<string, number> }) =>
        e.split === 'train' && Object.keys(e.metrics).some((k) => k.endsWith('reward')),
    ),
  ).toBe(true);
});

it('starts an RL job from logged trajectory groups and follows it to the end', { timeout: 300_000 }, async () => {
  const models = (await api(h.page, 'GET', '/v1/preview/models?order=desc', { key: h.key })).json.data;
  const demoModel = models.find((m: { project: string }) => m.project === 'demo');
  await h.page.evaluate((id) => (location.hash = `#/training?model=${id}`), demoModel.id);
  const rl = h.page.locator('hearth-training-forms form[aria-labelledby="rl"]');
  // The demo logged its round-1 rollouts at step 0, split train.
  await rl.getByLabel('Trajectory groups').locator('option[value="train@0"]').waitFor({ state: 'attached' });
  await rl.getByLabel('Trajectory groups').selectOption('train@0');
  await rl.getByLabel('Learning rate').fill('0.001');
  await rl.getByRole('button', { name: 'Start RL job' }).click();
  await h.page.waitForURL(/#\/training\/[0-9a-f-]{36}$/);
  const job = h.page.locator('hearth-training-job');
  await job.locator('[data-field="job-status"]', { hasText: /COMPLETED|FAILED/ }).waitFor({ timeout: 240_000 });
  expect(await job.locator('[data-field="job-status"]').innerText()).toBe('COMPLETED');
  expect(await job.locator('h3').innerText()).toMatch(/^RL job/);
  expect(await job.locator('[data-field="checkpoint"] a').first().innerText()).toMatch(/^local\/demo\/addition-\d+:step2$/);
});
