/**
 * Stage 1 of the demo training (docs/training.md): full-parameter pretraining of tiny-chat's
 * base weights on the demo task, on the CPU, starting from the random weights `npm run
 * make-models` writes (same seed). Hearth's own trainer only trains LoRA adapters on frozen base
 * weights, and a LoRA on random weights learns little, so this separate stage gives the base
 * model its first grasp of the task; stages 2 and 3 (scripts/train-demo.ts) then train through
 * Hearth's public API only, with SFT and RL.
 *
 *   npx tsx --import ./scripts/register-raw.mjs scripts/train-demo-pretrain.ts [--minutes 60]
 *     [--batch 32] [--lr 2e-3] [--max-digits 3] [--seed 1] [--resume]
 *
 * Writes .cache/demo/pretrained.safetensors (bf16, the bundled model's layout; rewritten at every
 * evaluation, so the run can be stopped at any time) and docs/training/pretrain.json (loss and
 * held-out accuracy curves). Conversations are tokenised exactly as Hearth's SFT path does
 * (service/training/sft-steps.ts), with the model's own chat template.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { answer, DEFAULT_PROBLEMS, evaluate, messages, problems, type AdditionProblem } from '../src/demo/addition';
import { writeSafetensors } from '../src/engine/model/files/safetensors-writer';
import type { TensorData } from '../src/engine/tensor/tensor-data';
import { greedyDecode, ReferenceModel } from '../src/engine/reference/model';
import { sftSequence } from '../src/service/training/sft-steps';
import { CpuLlama, type TrainSequence } from './demo/pretrain/cpu-llama';
import { config, conv, readTensors, ROOT, spec, template, tokenizer } from './demo/tiny-chat';
import { randomWeights } from './model-making/weights';

const OUT = join(ROOT, '.cache/demo/pretrained.safetensors');
const CURVES = join(ROOT, 'docs/training/pretrain.json');

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    batch: { type: 'string', default: '32' },
    lr: { type: 'string', default: '2e-3' },
    'max-digits': { type: 'string', default: String(DEFAULT_PROBLEMS.maxDigits) },
    seed: { type: 'string', default: '1' },
    'eval-every': { type: 'string', default: '50' },
    resume: { type: 'boolean', default: false },
  },
});
const minutes = Number(args.minutes);
const batchSize = Number(args.batch);
const peakLr = Number(args.lr);
const opts = { maxDigits: Number(args['max-digits']) };
const evalEvery = Number(args['eval-every']);

async function startWeights(): Promise<TensorData[]> {
  if (args.resume && existsSync(OUT)) {
    console.log(`resuming from ${OUT}`);
    return readTensors(OUT);
  }
  // Exactly the random weights make-models bundles.
  return randomWeights(config, spec.dtype, spec.seed, spec.config.initializer_range as number);
}

function sequence(p: AdditionProblem): TrainSequence {
  const seq = sftSequence({ messages: [...messages(p), { role: 'assistant', content: answer(p) }] }, 0, conv, 'all')!;
  return { tokens: [...seq.tokens], trainable: seq.trainable };
}

function evaluateHeldOut(cpu: CpuLlama, held: AdditionProblem[]) {
  const model = new ReferenceModel(config, cpu.tensors('f32'));
  const items = held.map((problem) => {
    const prompt = tokenizer.encode(template.render({ messages: messages(problem), addGenerationPrompt: true }), {
      addSpecialTokens: false,
    });
    const out = greedyDecode(model, prompt, 6);
    const end = out.findIndex((id) => id === 2 || id === 0);
    return { problem, completion: tokenizer.decode(end >= 0 ? out.slice(0, end) : out, { skipSpecialTokens: true }) };
  });
  return { ...evaluate(items), sample: items.slice(0, 3).map((i) => `${i.problem.a}+${i.problem.b}=${i.completion}`) };
}

const cpu = new CpuLlama(config, await startWeights());
// Distinct held-out problems (with one-digit operands there are only a dozen).
const held = [...new Map(problems('heldout', 400, 999, opts).map((p) => [`${p.a}+${p.b}`, p])).values()].slice(0, 200);
type Point = {
  step: number;
  examples: number;
  loss: number;
  seconds: number;
  accuracy?: number;
  meanReward?: number;
  trainAccuracy?: number;
  lr?: number;
};
// A resumed run continues the curves (and the step count) of the run it resumes.
const previous = args.resume && existsSync(CURVES) ? (JSON.parse(readFileSync(CURVES, 'utf8')) as { curves: Point[] }).curves : [];
const curves: Point[] = previous;
const stepOffset = previous.length ? previous[previous.length - 1].step : 0;
const secondsOffset = previous.length ? previous[previous.length - 1].seconds : 0;
const trainSample = problems('train', 60, 4242, opts);
mkdirSync(dirname(OUT), { recursive: true });
mkdirSync(dirname(CURVES), { recursive: true });
const started = Date.now();
const budget = minutes * 60_000;
let step = 0;
let seed = Number(args.seed) * 7919;
let running = 0;
for (;;) {
  const elapsed = Date.now() - started;
  const done = elapsed > budget;
  // Linear warmup over 50 steps (fresh runs), then cosine decay to 10% over the time budget.
  const progress = Math.min(1, elapsed / budget);
  const warm = previous.length ? 1 : Math.min(1, (step + 1) / 50);
  const lr = peakLr * warm * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * progress)));
  if (step % evalEvery === 0 || done) {
    const e = evaluateHeldOut(cpu, held);
    const t = evaluateHeldOut(cpu, trainSample);
    const at = stepOffset + step;
    if (!(previous.length && step === 0)) {
      curves.push({
        step: at,
        examples: at * batchSize,
        loss: running,
        seconds: secondsOffset + Math.round(elapsed / 1000),
        accuracy: e.accuracy,
        meanReward: e.meanReward,
        trainAccuracy: t.accuracy,
        lr,
      });
    }
    console.log(
      `step ${at} (${Math.round(elapsed / 1000)} s, lr ${lr.toExponential(2)}): loss ${running.toFixed(3)}, held-out accuracy ${(100 * e.accuracy).toFixed(1)}%, reward ${e.meanReward.toFixed(3)}, train accuracy ${(100 * t.accuracy).toFixed(1)}%; ${e.sample.join('  ')}`,
    );
    writeFileSync(OUT, writeSafetensors(cpu.tensors('bf16'), { format: 'pt' }));
    writeFileSync(CURVES, JSON.stringify({ stage: 'pretrain', batchSize, peakLr, maxDigits: opts.maxDigits, curves }, null, 1) + '\n');
  }
  if (done) break;
  const batch = problems('train', batchSize, seed++, opts).map(sequence);
  cpu.zeroGrad();
  const { loss } = cpu.lossAndBackward(batch);
  cpu.adamw(lr, { weightDecay: 0.01, maxNorm: 1 });
  running = step === 0 ? loss : 0.95 * running + 0.05 * loss;
  step++;
}
console.log(`wrote ${OUT} and ${CURVES}`);
