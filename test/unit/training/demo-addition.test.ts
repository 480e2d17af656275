// The demo task: disjoint deterministic splits, the reward's exact and partial credit, evaluation.
import { describe, expect, it } from 'vitest';
import { answer, evaluate, isHeldOut, problems, question, reward, sftLine } from '../../../src/demo/addition';

describe('demo addition task', () => {
  it('draws deterministic problems of 1-3 digits, never mixing the splits', () => {
    const train = problems('train', 500, 1);
    const held = problems('heldout', 100, 2);
    expect(problems('train', 500, 1)).toEqual(train);
    expect(train.every((p) => !isHeldOut(p))).toBe(true);
    expect(held.every(isHeldOut)).toBe(true);
    const key = (p: { a: number; b: number }) => `${p.a}+${p.b}`;
    const heldKeys = new Set(held.map(key));
    expect(train.some((p) => heldKeys.has(key(p)))).toBe(false);
    expect(Math.max(...train.map((p) => Math.max(p.a, p.b)))).toBeLessThan(1000);
    expect(new Set(train.map((p) => String(p.a).length))).toEqual(new Set([1, 2, 3]));
    expect(problems('train', 50, 1, { maxDigits: 1 }).every((p) => p.a < 10 && p.b < 10)).toBe(true);
  });

  it('asks and answers in the chat format', () => {
    const p = { a: 347, b: 85 };
    expect(question(p)).toBe('What is 347 + 85?');
    expect(answer(p)).toBe('432');
    expect(JSON.parse(sftLine(p))).toEqual({
      messages: [
        { role: 'user', content: 'What is 347 + 85?' },
        { role: 'assistant', content: '432' },
      ],
    });
  });

  it('rewards the exact sum with 1 and plain numbers with digit credit', () => {
    const p = { a: 347, b: 85 };
    expect(reward(p, '432')).toBe(1);
    expect(reward(p, ' 432\n')).toBe(1);
    expect(reward(p, '532')).toBeCloseTo(0.1 + 0.4 * (2 / 3), 12);
    expect(reward(p, '1432')).toBeCloseTo(0.1 + 0.4 * (3 / 4), 12);
    expect(reward(p, '7')).toBeCloseTo(0.1, 12);
    expect(reward(p, 'The answer is 432')).toBe(0);
    expect(reward(p, '')).toBe(0);
    const e = evaluate([
      { problem: p, completion: '432' },
      { problem: p, completion: 'x' },
    ]);
    expect(e).toEqual({ accuracy: 0.5, meanReward: 0.5, count: 2 });
  });
});
