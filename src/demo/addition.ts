/**
 * Hearth's demo task: adding two whole numbers, a verifiable reward small enough for the bundled
 * 4M-parameter tiny-chat model (its tokenizer splits digits, one token each) to learn on a CPU or
 * SwiftShader. Shared by the training script (scripts/train-demo.ts), the end-to-end tests and
 * the UI: problems, a train / held-out split, the chat messages of a problem, SFT data lines in
 * ART's train.jsonl format, the reward, the logged group of a problem's rollouts, and an
 * evaluation summary.
 *
 * The question is "What is 347 + 85?" and the expected answer is the sum alone ("432"). Reward:
 * 1 for the exact answer; otherwise a plain number earns 0.1 for the format plus up to 0.4 for
 * digits right in the right place (counted from the units, over the longer of the two numbers);
 * anything else earns 0. Partial credit gives RL a gradient before the first exact answers.
 *
 * Not here: talking to Hearth (the script and tests do, through /v1).
 */
import { mulberry32 } from '../engine/tensor/random';

export interface AdditionProblem {
  a: number;
  b: number;
}

export interface ProblemOptions {
  /** Largest number of digits of an operand (1..6). */
  maxDigits: number;
}

export const DEFAULT_PROBLEMS: ProblemOptions = { maxDigits: 3 };

/** One problem in 8 is held out from training, decided by a hash of the pair, so splits never overlap. */
export function isHeldOut(p: AdditionProblem): boolean {
  let h = Math.imul(p.a + 1, 0x9e3779b1) ^ Math.imul(p.b + 7, 0x85ebca77);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  return ((h ^ (h >>> 12)) >>> 0) % 8 === 0;
}

/** An operand with 1..maxDigits digits, each digit count equally likely (so short sums are not rare). */
function operand(rand: () => number, maxDigits: number): number {
  const digits = 1 + Math.floor(rand() * maxDigits);
  const low = digits === 1 ? 0 : 10 ** (digits - 1);
  return low + Math.floor(rand() * (10 ** digits - low));
}

/** `count` problems of one split, deterministic in `seed`. */
export function problems(
  split: 'train' | 'heldout',
  count: number,
  seed: number,
  opts: ProblemOptions = DEFAULT_PROBLEMS,
): AdditionProblem[] {
  const rand = mulberry32(seed);
  const out: AdditionProblem[] = [];
  for (let tries = 0; out.length < count; tries++) {
    if (tries > count * 100) throw new Error(`Cannot draw ${count} ${split} problems with ${opts.maxDigits} digits.`);
    const p = { a: operand(rand, opts.maxDigits), b: operand(rand, opts.maxDigits) };
    if (isHeldOut(p) === (split === 'heldout')) out.push(p);
  }
  return out;
}

export function question(p: AdditionProblem): string {
  return `What is ${p.a} + ${p.b}?`;
}

export function answer(p: AdditionProblem): string {
  return String(p.a + p.b);
}

/** The conversation of a problem, as sent to /v1/chat/completions. */
export function messages(p: AdditionProblem): { role: 'user'; content: string }[] {
  return [{ role: 'user', content: question(p) }];
}

/** One SFT example in ART's train.jsonl format. */
export function sftLine(p: AdditionProblem): string {
  return JSON.stringify({ messages: [...messages(p), { role: 'assistant', content: answer(p) }] });
}

export function reward(p: AdditionProblem, completion: string): number {
  const text = completion.trim();
  const want = answer(p);
  if (text === want) return 1;
  if (!/^\d+$/.test(text)) return 0;
  const n = Math.max(text.length, want.length);
  let right = 0;
  for (let i = 1; i <= n; i++) if (text[text.length - i] !== undefined && text[text.length - i] === want[want.length - i]) right++;
  return 0.1 + 0.4 * (right / n);
}

/** A chat completion choice as /v1/chat/completions returns it (only what the group needs is typed). */
export interface RolloutChoice {
  message: { content: string | null };
}

/**
 * The TrajectoryGroup ART logs for one problem's rollouts: each choice after the problem's
 * messages, rewarded; `metrics` adds per-trajectory metrics from the reward.
 */
export function rolloutGroup<C extends RolloutChoice>(
  p: AdditionProblem,
  choices: readonly C[],
  metrics: (reward: number) => Record<string, number> = () => ({}),
) {
  return {
    trajectories: choices.map((choice) => {
      const r = reward(p, String(choice.message.content ?? ''));
      return { messages_and_choices: [...messages(p), choice], reward: r, metrics: metrics(r), metadata: { a: p.a, b: p.b }, logs: [] };
    }),
    exceptions: [],
    metadata: {},
    metrics: {},
    logs: [],
  };
}

export interface Evaluation {
  /** Fraction answered exactly. */
  accuracy: number;
  meanReward: number;
  count: number;
}

export function evaluate(items: readonly { problem: AdditionProblem; completion: string }[]): Evaluation {
  const rewards = items.map((i) => reward(i.problem, i.completion));
  return {
    accuracy: items.length ? rewards.filter((r) => r === 1).length / items.length : 0,
    meanReward: items.length ? rewards.reduce((s, r) => s + r, 0) / items.length : 0,
    count: items.length,
  };
}
