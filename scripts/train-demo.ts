/**
 * Stages 2 and 3 of the demo training (docs/training.md), through Hearth's public API only:
 * start Hearth in Node (scripts/demo/node-hearth.ts: the same app, engine and trainer as the
 * browser, WebGPU from Dawn), register a model on tiny-chat, evaluate it on held-out problems,
 * upload SFT data as an artifact and run an SFT job, then RL rounds as ART runs them (rollouts
 * through /v1/chat/completions with logprobs, rewards, /log, an RL training job, its events),
 * evaluating after each round. Writes the curves to docs/training/demo.json and a chart to
 * docs/training/curves.svg, and with --bake merges the final adapter (downloaded through the API
 * as a PEFT zip) into the base weights and writes public/models/tiny-chat/model.safetensors.
 *
 *   npx tsx --import ./scripts/register-raw.mjs scripts/train-demo.ts [--base .cache/demo/pretrained.safetensors]
 *     [--sft-examples 256] [--sft-batch 8] [--sft-lr 1e-3] [--rounds 6] [--groups 8] [--group-size 6]
 *     [--rl-lr 1e-3] [--max-digits 1] [--heldout 60] [--bake]
 *
 * --base first copies stage 1's pretrained weights (scripts/train-demo-pretrain.ts) over
 * public/models/tiny-chat/model.safetensors, so Hearth serves and trains on them.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { unzipSync } from 'fflate';
import { evaluate, problems, sftLine, type AdditionProblem } from '../src/demo/addition';
import { SafetensorsFile } from '../src/engine/model/files/safetensors';
import { writeSafetensors } from '../src/engine/model/files/safetensors-writer';
import type { TensorData } from '../src/engine/tensor/tensor-data';
import { HearthClient } from './demo/client';
import { mergeLora } from './demo/merge-lora';
import { plotCurves } from './demo/plot-curves';
import { startNodeHearth } from './demo/node-hearth';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WEIGHTS = join(ROOT, 'public/models/tiny-chat/model.safetensors');
const OUT = join(ROOT, 'docs/training');

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    'sft-examples': { type: 'string', default: '256' },
    'sft-batch': { type: 'string', default: '8' },
    'sft-lr': { type: 'string', default: '1e-3' },
    rounds: { type: 'string', default: '6' },
    groups: { type: 'string', default: '8' },
    'group-size': { type: 'string', default: '6' },
    'rl-lr': { type: 'string', default: '1e-3' },
    temperature: { type: 'string', default: '1' },
    'max-digits': { type: 'string', default: '1' },
    heldout: { type: 'string', default: '60' },
    seed: { type: 'string', default: '3' },
    bake: { type: 'boolean', default: false },
  },
});
const num = (k: keyof typeof args) => Number(args[k]);
const opts = { maxDigits: num('max-digits') };

async function tensorsOf(bytes: Uint8Array, name: string): Promise<TensorData[]> {
  const file = await SafetensorsFile.open(bytes, name);
  const out: TensorData[] = [];
  for await (const t of file.tensors()) out.push(t);
  return out;
}

function distinct(list: AdditionProblem[]): AdditionProblem[] {
  return [...new Map(list.map((p) => [`${p.a}+${p.b}`, p])).values()];
}

if (args.base) {
  if (!existsSync(args.base)) throw new Error(`--base ${args.base} does not exist: run scripts/train-demo-pretrain.ts first.`);
  copyFileSync(args.base, WEIGHTS);
  console.log(`copied ${args.base} to ${WEIGHTS}`);
}

const hearth = await startNodeHearth();
const api = new HearthClient(hearth.url, hearth.adminKey);
const started = Date.now();
const log = (s: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${s}`);
try {
  const model = await api.call('POST', '/v1/preview/models', {
    entity: null,
    project: 'demo',
    name: `addition-${Date.now()}`,
    base_model: 'hearth/tiny-chat',
    return_existing: true,
  });
  const modelName = (step: number) => `${model.entity}/${model.project}/${model.name}:step${step}`;
  const held = distinct(problems('heldout', 4 * num('heldout'), 999, opts)).slice(0, num('heldout'));
  const evaluateAt = async (step: number) => {
    const completions = await api.answers(modelName(step), held);
    const e = evaluate(held.map((problem, i) => ({ problem, completion: completions[i] })));
    log(
      `step ${step}: held-out accuracy ${(100 * e.accuracy).toFixed(1)}%, mean reward ${e.meanReward.toFixed(3)} (${held
        .slice(0, 3)
        .map((p, i) => `${p.a}+${p.b}=${completions[i]}`)
        .join(', ')})`,
    );
    return e;
  };
  const curves = {
    config: { ...args, heldoutProblems: held.length },
    evaluations: [] as { step: number; stage: string; accuracy: number; meanReward: number }[],
    sftLoss: [] as { batch: number; loss: number; tokensPerSecond: number }[],
    rl: [] as { step: number; trainReward: number; trainAccuracy: number; loss: number; gradNorm: number; tokensPerSecond: number }[],
  };
  const e0 = await evaluateAt(0);
  curves.evaluations.push({ step: 0, stage: 'base', ...e0 });

  // Stage 2: SFT from an uploaded artifact, ART's train.jsonl format.
  const sftProblems = problems('train', num('sft-examples'), num('seed'), opts);
  const artifact = await api.upload(
    '/v1/preview/artifacts',
    { model_id: model.id },
    { 'train.jsonl': sftProblems.map(sftLine).join('\n') + '\n' },
  );
  const sft = await api.call('POST', '/v1/preview/sft-training-jobs', {
    model_id: model.id,
    training_data_url: artifact.url,
    config: { batch_size: num('sft-batch'), learning_rate: num('sft-lr') },
  });
  await api.waitForJob(sft.id, (m) => {
    curves.sftLoss.push({ batch: curves.sftLoss.length + 1, loss: m.loss, tokensPerSecond: m.tokens_per_second });
    if (curves.sftLoss.length % 8 === 0)
      log(`SFT batch ${curves.sftLoss.length}: loss ${m.loss.toFixed(3)}, ${m.tokens_per_second.toFixed(0)} tokens/s`);
  });
  let step = (await api.call('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).data[0].step;
  const e1 = await evaluateAt(step);
  curves.evaluations.push({ step, stage: 'sft', ...e1 });

  // Stage 3: RL rounds, one training job per round (ART's loop).
  for (let round = 0; round < num('rounds'); round++) {
    const batch = problems('train', num('groups'), num('seed') * 1000 + round, opts);
    const groups = await Promise.all(batch.map((p) => api.rolloutGroup(modelName(step), p, num('group-size'), num('temperature'))));
    const rewards = groups.flatMap((g) => g.trajectories.map((t: { reward: number }) => t.reward));
    const trainReward = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const trainAccuracy = rewards.filter((r) => r === 1).length / rewards.length;
    await api.call('POST', `/v1/preview/models/${model.id}/log`, { model_id: model.id, split: 'train', trajectory_groups: groups });
    const job = await api.call('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: groups,
      experimental_config: {
        learning_rate: num('rl-lr'),
        advantage_balance: 0,
        importance_sampling_level: 'token',
        epsilon: null,
        epsilon_high: null,
        kimi_k2_tau: null,
        ppo: false,
        precalculate_logprobs: false,
        scale_rewards: true,
        mask_prob_ratio: false,
        max_negative_advantage_importance_sampling_weight: null,
      },
    });
    const metrics = await api.waitForJob(job.id);
    step = (await api.call('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).data[0].step;
    const mean = (k: string) => (metrics.length ? metrics.reduce((a, m) => a + (m[k] ?? 0), 0) / metrics.length : 0);
    curves.rl.push({
      step,
      trainReward,
      trainAccuracy,
      loss: mean('loss'),
      gradNorm: mean('grad_norm'),
      tokensPerSecond: mean('tokens_per_second'),
    });
    log(
      `RL round ${round + 1}: rollout reward ${trainReward.toFixed(3)} (exact ${(100 * trainAccuracy).toFixed(0)}%), ${metrics.length} steps`,
    );
    const e = await evaluateAt(step);
    curves.evaluations.push({ step, stage: 'rl', ...e });
  }

  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, 'demo.json'), JSON.stringify(curves, null, 1) + '\n');
  plotCurves(OUT);
  log(`wrote ${join(OUT, 'demo.json')} and ${join(OUT, 'curves.svg')}`);

  if (args.bake) {
    const zip = unzipSync(await api.bytes(`/v1/preview/models/${model.id}/checkpoints/${step}/adapter`));
    const config = JSON.parse(new TextDecoder().decode(zip['adapter_config.json']));
    const adapter = await tensorsOf(zip['adapter_model.safetensors'], 'adapter_model.safetensors');
    const base = await tensorsOf(new Uint8Array(readFileSync(WEIGHTS)), WEIGHTS);
    const merged = mergeLora(base, adapter, { rank: config.r, alpha: config.lora_alpha, useRslora: config.use_rslora === true });
    writeFileSync(WEIGHTS, writeSafetensors(merged, { format: 'pt' }));
    log(`baked checkpoint step ${step} into ${WEIGHTS}`);
  }
} finally {
  await hearth.close();
}
