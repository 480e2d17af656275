// SFT examples -> steps: assistant-token targets (all turns, the last, or a loss_mask), tool
// calls and the end token trained, batches in file order with their learning rates, and
// over-long examples dropped.
import { describe, expect, it } from 'vitest';
import { planSftSteps, sftSequence } from '../../../src/service/training/sft-steps';
import { bundledTokenizer, ids } from './fixtures';

const chat = bundledTokenizer('tiny-chat');
const conversation = {
  messages: [
    { role: 'user', content: '1 + 1' },
    { role: 'assistant', content: '2' },
    { role: 'user', content: '2 + 3' },
    { role: 'assistant', content: '5' },
  ],
};
const p1 = ids(chat, '<|im_start|>user\n1 + 1<|im_end|>\n<|im_start|>assistant\n');
const p2 = ids(chat, '\n<|im_start|>user\n2 + 3<|im_end|>\n<|im_start|>assistant\n');

describe('sftSequence', () => {
  it("trains every assistant turn's content and end token", () => {
    const seq = sftSequence(conversation, 1, chat, 'all')!;
    expect([...seq.tokens]).toEqual([...p1, ...ids(chat, '2'), 2, ...p2, ...ids(chat, '5'), 2]);
    expect([...seq.trainable]).toEqual([...p1.map(() => 0), 1, 1, ...p2.map(() => 0), 1, 1]);
  });

  it('trains only the last turn with assistant_turns "last", or the turns a loss_mask picks', () => {
    const last = sftSequence(conversation, 1, chat, 'last')!;
    expect([...last.trainable]).toEqual([...p1.map(() => 0), 0, 0, ...p2.map(() => 0), 1, 1]);
    const masked = sftSequence({ ...conversation, loss_mask: [0, 1, 0, 0] }, 1, chat, 'all')!;
    // Nothing after the last trained turn is kept.
    expect([...masked.tokens]).toEqual([...p1, ...ids(chat, '2'), 2]);
    expect(() => sftSequence({ ...conversation, loss_mask: [1] }, 3, chat, 'all')).toThrow(/example 3: loss_mask/);
  });

  it('trains the tool calls the template writes after the content', () => {
    const call = { id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a": 1}' } };
    const seq = sftSequence(
      {
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: '', tool_calls: [call] },
        ],
      },
      1,
      chat,
      'all',
    )!;
    const prompt = ids(chat, '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n');
    const target = ids(chat, '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>');
    expect([...seq.tokens]).toEqual([...prompt, ...target]);
    expect([...seq.trainable]).toEqual([...prompt.map(() => 0), ...target.map(() => 1)]);
  });
});

describe('planSftSteps', () => {
  const ex = (a: string) => ({
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: a },
    ],
  });
  const examples = [ex('1'), ex('2'), ex('3'), ex('4 '.repeat(40)), ex('5')];

  it('batches in file order with one rate per batch, dropping over-long examples', () => {
    const steps = planSftSteps(examples, { tokenizer: chat, maxLength: 30, batchSize: 2, learningRate: [1, 2, 3], assistantTurns: 'all' });
    expect(steps.map((s) => s.batch)).toEqual([0, 1, 2]);
    expect(steps.map((s) => s.learningRate)).toEqual([1, 2, 3]);
    expect(steps.map((s) => s.sequences.length)).toEqual([2, 1, 1]);
    expect(steps[1].dropped).toBe(1);
    const last = steps[2].sequences[0];
    expect(chat.tokenizer.decode([...last.tokens].filter((_, i) => last.trainable[i]))).toBe('5<|im_end|>');
  });

  it('skips a batch left empty and uses one rate for all with a float', () => {
    const steps = planSftSteps([ex('1'), ex('9 '.repeat(40))], {
      tokenizer: chat,
      maxLength: 30,
      batchSize: 1,
      learningRate: 0.5,
      assistantTurns: 'all',
    });
    expect(steps.map((s) => [s.batch, s.learningRate])).toEqual([[0, 0.5]]);
  });
});
