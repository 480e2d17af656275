/**
 * Stage 4 of the demo training (docs/training.md): makes hearth/tiny-json, the bundled model for
 * structured outputs, from tiny-chat: it learns to answer "Describe a person as JSON." and its kin
 * with a small, closed JSON object, and a sum asked with the add tool offered with one call of it.
 * Full-parameter training on the CPU (the same trainer as stage 1, scripts/demo/pretrain/),
 * starting from tiny-chat's stage-3 weights (or `--from`), on batches that mix the task's sums
 * with JSON requests and tool calls (scripts/demo/json-objects.ts), tokenised as Hearth's SFT path
 * does. The default model stays tiny-chat: this stage costs it sums and plain replies (issue 27).
 *
 *   npx tsx --import ./scripts/register-raw.mjs scripts/train-demo-json.ts [--minutes 40]
 *     [--batch 16] [--lr 1e-3] [--json-share 0.5] [--plain-persons 0.25] [--tool-share 0.25]
 *     [--seed 1] [--from F] [--out F] [--curves F] [--after F] [--install]
 *
 * `--json-share`: the share of each batch that is JSON requests; `--tool-share`: the share of the
 * sums asked with the tool. Why: a JSON schema's grammar forces the keys and punctuation, but a
 * free string ends only when the model writes its closing quote, and an array of calls only when
 * it prefers `]`. The model trained on sums alone almost never closed a string, so at temperature
 * 1 a person's name ran on to the token limit (issue 13).
 *
 * Writes .cache/demo/json.safetensors (bf16, the bundled layout; rewritten at every evaluation)
 * and docs/training/json.json (per evaluation: loss, greedy sum accuracy on held-out and training
 * pairs, held-out JSON loss, and how many persons sampled at temperature 1 without a grammar parse);
 * `--install` copies the result over public/models/tiny-json/model.safetensors at the end.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { answer, evaluate, messages, problems, question, type AdditionProblem } from '../src/demo/addition';
import { writeSafetensors } from '../src/engine/model/files/safetensors-writer';
import { mulberry32 } from '../src/engine/tensor/random';
import { greedyDecode, ReferenceModel } from '../src/engine/reference/model';
import { sftSequence } from '../src/service/training/sft-steps';
import { ADD_TOOL, addToolCall, jsonRequests } from './demo/json-objects';
import { CpuLlama, type TrainSequence } from './demo/pretrain/cpu-llama';
import { config, conv, EOS, MODEL_DIR, readTensors, ROOT, template, tokenizer } from './demo/tiny-chat';

const STAGE3 = join(MODEL_DIR, 'model.safetensors');
const INSTALLED = join(ROOT, 'public/models/tiny-json/model.safetensors');

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '40' },
    batch: { type: 'string', default: '16' },
    lr: { type: 'string', default: '1e-3' },
    'json-share': { type: 'string', default: '0.5' },
    'plain-persons': { type: 'string', default: '0.25' },
    'tool-share': { type: 'string', default: '0.25' },
    seed: { type: 'string', default: '1' },
    'eval-every': { type: 'string', default: '25' },
    from: { type: 'string', default: STAGE3 },
    out: { type: 'string', default: join(ROOT, '.cache/demo/json.safetensors') },
    curves: { type: 'string', default: join(ROOT, 'docs/training/json.json') },
    after: { type: 'string' },
    install: { type: 'boolean', default: false },
  },
});
const OUT = args.out;
const CURVES = args.curves;
const minutes = Number(args.minutes);
const batchSize = Number(args.batch);
const peakLr = Number(args.lr);
const jsonShare = Number(args['json-share']);
const plainPersons = Number(args['plain-persons']);
const toolShare = Number(args['tool-share']);
const evalEvery = Number(args['eval-every']);
const sums = { maxDigits: 1 };

type Message = { role: 'user' | 'assistant'; content: string };

function sequence(conversation: Message[], tools?: unknown[]): TrainSequence {
  const seq = sftSequence({ messages: conversation, tools }, 0, conv, 'all')!;
  return { tokens: [...seq.tokens], trainable: seq.trainable };
}

const promptIds = (content: string, tools?: readonly unknown[]) =>
  tokenizer.encode(template.render({ messages: [{ role: 'user', content }], tools, addGenerationPrompt: true }), {
    addSpecialTokens: false,
  });

/** The greedy reply (text up to the end of the turn) to a prompt. */
function greedyReply(model: ReferenceModel, prompt: number[], steps: number): string {
  const out = greedyDecode(model, prompt, steps);
  const end = out.findIndex((id) => EOS.includes(id));
  return tokenizer.decode(end >= 0 ? out.slice(0, end) : out, { skipSpecialTokens: true });
}

function sumAccuracy(model: ReferenceModel, problemsAsked: AdditionProblem[]) {
  return evaluate(problemsAsked.map((problem) => ({ problem, completion: greedyReply(model, promptIds(question(problem)), 6) })));
}

/** One reply sampled at temperature 1, unconstrained: its text and whether the turn ended. */
function sample(model: ReferenceModel, prompt: number[], rand: () => number, maxTokens: number) {
  const session = model.session();
  const V = config.vocabSize;
  let logits = session.append(prompt).subarray((prompt.length - 1) * V);
  const out: number[] = [];
  for (let s = 0; s < maxTokens; s++) {
    let max = -Infinity;
    for (let i = 0; i < V; i++) max = Math.max(max, logits[i]);
    let total = 0;
    const p = new Float64Array(V);
    for (let i = 0; i < V; i++) total += p[i] = Math.exp(logits[i] - max);
    let u = rand() * total;
    let token = V - 1;
    for (let i = 0; i < V; i++)
      if ((u -= p[i]) <= 0) {
        token = i;
        break;
      }
    if (EOS.includes(token)) return { text: tokenizer.decode(out, { skipSpecialTokens: true }), ended: true };
    out.push(token);
    logits = session.append([token]);
  }
  return { text: tokenizer.decode(out, { skipSpecialTokens: true }), ended: false };
}

/** A person object as the issue's schema has it: {name: string, age: integer, tags: string[]}. */
function isPerson(text: string): boolean {
  try {
    const o = JSON.parse(text);
    return (
      typeof o.name === 'string' && Number.isInteger(o.age) && Array.isArray(o.tags) && o.tags.every((t: unknown) => typeof t === 'string')
    );
  } catch {
    return false;
  }
}

/** Mean nats per reply token on held-out JSON requests (a seed the training batches never draw). */
function jsonLoss(model: ReferenceModel): number {
  let total = 0;
  let count = 0;
  for (const r of jsonRequests(24, -1, plainPersons)) {
    const seq = sequence([
      { role: 'user', content: r.prompt },
      { role: 'assistant', content: r.reply },
    ]);
    const logits = model.session().append(seq.tokens);
    const V = config.vocabSize;
    for (let i = 1; i < seq.tokens.length; i++) {
      if (!seq.trainable[i]) continue;
      const row = logits.subarray((i - 1) * V, i * V);
      let max = -Infinity;
      for (const x of row) max = Math.max(max, x);
      let sum = 0;
      for (const x of row) sum += Math.exp(x - max);
      total += max + Math.log(sum) - row[seq.tokens[i]];
      count++;
    }
  }
  return total / count;
}

/** Of `n` persons sampled at temperature 1 within 60 tokens: how many ended closed and valid. */
function sampledPersons(model: ReferenceModel, n: number) {
  const rand = mulberry32(99);
  const prompt = promptIds('Describe a person as JSON.');
  const replies = Array.from({ length: n }, () => sample(model, prompt, rand, 60));
  return { valid: replies.filter((r) => r.ended && isPerson(r.text)).length, sample: replies.slice(0, 2).map((r) => r.text) };
}

const cpu = new CpuLlama(config, await readTensors(args.from));
const distinct = (ps: AdditionProblem[]) => [...new Map(ps.map((p) => [`${p.a}+${p.b}`, p])).values()];
const held = distinct(problems('heldout', 400, 999, sums));
const trained = distinct(problems('train', 400, 4242, sums)).slice(0, 40);
type Point = {
  step: number;
  loss: number;
  seconds: number;
  lr: number;
  sumAccuracy: number;
  /** Absent in the first two bundled runs' points (recorded from the third on). */
  trainSumAccuracy?: number;
  jsonLoss: number;
  personsValid: number;
  personsSampled: number;
};
// `--after`: the curves of the run whose weights `--from` continues, kept in front of this run's
// (steps and seconds offset), so a chain of runs gives one curve.
const before: Point[] = args.after ? JSON.parse(readFileSync(args.after, 'utf8')).curves : [];
const curves: Point[] = [...before];
const stepOffset = before.length ? before[before.length - 1].step : 0;
const secondsOffset = before.length ? before[before.length - 1].seconds : 0;
mkdirSync(dirname(OUT), { recursive: true });
const started = Date.now();
const budget = minutes * 60_000;
const rand = mulberry32(Number(args.seed) * 7919);
let step = 0;
let running = 0;
for (;;) {
  const elapsed = Date.now() - started;
  const done = elapsed >= budget;
  // Short warmup (the weights are trained already), then cosine decay to 10% over the budget.
  const progress = budget > 0 ? Math.min(1, elapsed / budget) : 1;
  const lr = peakLr * Math.min(1, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * progress)));
  if (step % evalEvery === 0 || done) {
    const model = new ReferenceModel(config, cpu.tensors('f32'));
    const s = sumAccuracy(model, held);
    const t = sumAccuracy(model, trained);
    const p = sampledPersons(model, 20);
    const j = jsonLoss(model);
    const tool = greedyReply(model, promptIds('What is 5 + 2?', [ADD_TOOL]), 24);
    curves.push({
      step: stepOffset + step,
      loss: running,
      seconds: secondsOffset + Math.round(elapsed / 1000),
      lr,
      sumAccuracy: s.accuracy,
      trainSumAccuracy: t.accuracy,
      jsonLoss: j,
      personsValid: p.valid,
      personsSampled: 20,
    });
    console.log(
      `step ${step} (${Math.round(elapsed / 1000)} s, lr ${lr.toExponential(2)}): loss ${running.toFixed(3)}, held-out sums ${(100 * s.accuracy).toFixed(0)}%, train sums ${(100 * t.accuracy).toFixed(0)}%, held-out JSON ${j.toFixed(3)} nats/token, persons ${p.valid}/20; with the add tool: ${tool}; ${p.sample.join('  |  ')}`,
    );
    writeFileSync(OUT, writeSafetensors(cpu.tensors('bf16'), { format: 'pt' }));
    writeFileSync(
      CURVES,
      JSON.stringify({ stage: 'json', batchSize, peakLr, jsonShare, plainPersons, toolShare, from: args.from, curves }, null, 1) + '\n',
    );
  }
  if (done) break;
  const json = jsonRequests(Math.round(batchSize * jsonShare), Math.floor(rand() * 2 ** 31), plainPersons);
  const batch = [
    // A share of the sums is asked with the add tool offered and answered with its call.
    ...problems('train', batchSize - json.length, Math.floor(rand() * 2 ** 31), sums).map((p) =>
      rand() < toolShare
        ? sequence([...messages(p), { role: 'assistant', content: addToolCall(p.a, p.b) }], [ADD_TOOL])
        : sequence([...messages(p), { role: 'assistant', content: answer(p) }]),
    ),
    ...json.map((r) =>
      sequence([
        { role: 'user', content: r.prompt },
        { role: 'assistant', content: r.reply },
      ]),
    ),
  ];
  cpu.zeroGrad();
  const { loss } = cpu.lossAndBackward(batch);
  cpu.adamw(lr, { weightDecay: 0.01, maxNorm: 1 });
  running = step === 0 ? loss : 0.95 * running + 0.05 * loss;
  step++;
}
if (args.install) copyFileSync(OUT, INSTALLED);
console.log(`wrote ${OUT} and ${CURVES}${args.install ? `, installed as ${INSTALLED}` : ''}`);
