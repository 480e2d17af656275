// Trajectory histories -> token sequences with the real tiny-chat / tiny-qwen3 tokenizers and
// templates: the expected sequences are written out by hand from the ChatML layout.
import { describe, expect, it } from 'vitest';
import { tokenizeHistory } from '../../../src/service/training/rl-histories';
import { bundledTokenizer, choice, ids } from './fixtures';

const chat = bundledTokenizer('tiny-chat');
const qwen3 = bundledTokenizer('tiny-qwen3');
const opts = { trainWithoutLogprobs: false };
const sequencesOf = (...args: Parameters<typeof tokenizeHistory>) => tokenizeHistory(...args).sequences;

describe('tokenizeHistory', () => {
  it("splices a Choice's sampled ids after the templated prompt, with its logprobs", () => {
    const c = choice(chat, '5', { logprob: -0.25 });
    const [seq, ...rest] = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'What is 2 + 3?' }, c] }, chat, opts);
    expect(rest).toEqual([]);
    const prompt = ids(chat, '<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n');
    expect(seq.tokens).toEqual([...prompt, ...ids(chat, '5'), 2]);
    expect(seq.trainable).toEqual([...prompt.map(() => 0), 1, 1]);
    expect(seq.logprobs.slice(prompt.length)).toEqual([-0.25, -0.26]);
    expect(seq.logprobs.slice(0, prompt.length).every(Number.isNaN)).toBe(true);
  });

  it('puts a later turn in the same sequence when its prompt extends the first, and cuts after the last trainable Choice', () => {
    const items = [
      { role: 'system', content: 'Add.' },
      { role: 'user', content: '1 + 1' },
      choice(chat, '2'),
      { role: 'user', content: '2 + 2' },
      choice(chat, '4'),
      { role: 'user', content: 'thanks' },
      { finish_reason: 'stop', index: 0, message: { role: 'assistant', content: 'bye' }, logprobs: null },
    ];
    const [seq] = sequencesOf({ messages_and_choices: items }, chat, opts);
    const p1 = ids(chat, '<|im_start|>system\nAdd.<|im_end|>\n<|im_start|>user\n1 + 1<|im_end|>\n<|im_start|>assistant\n');
    const p2 = ids(chat, '\n<|im_start|>user\n2 + 2<|im_end|>\n<|im_start|>assistant\n');
    expect(seq.tokens).toEqual([...p1, ...ids(chat, '2'), 2, ...p2, ...ids(chat, '4'), 2]);
    expect(seq.trainable).toEqual([...p1.map(() => 0), 1, 1, ...p2.map(() => 0), 1, 1]);
  });

  it("keeps the template's end token in the next prompt when the Choice stopped without one (finish_reason length)", () => {
    const items = [
      { role: 'user', content: 'hi' },
      choice(chat, 'hel', { eos: false }),
      { role: 'user', content: 'more' },
      choice(chat, 'ok'),
    ];
    const [seq] = sequencesOf({ messages_and_choices: items }, chat, opts);
    const after = ids(chat, '<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n');
    const hel = ids(chat, 'hel');
    const p1 = ids(chat, '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    expect(seq.tokens).toEqual([...p1, ...hel, ...after, ...ids(chat, 'ok'), 2]);
    expect(seq.trainable.slice(p1.length + hel.length, p1.length + hel.length + after.length).every((m) => m === 0)).toBe(true);
  });

  it('renders Choices without logprobs as context, and a history with none trainable gives nothing', () => {
    const plain = { finish_reason: 'stop', index: 0, message: { role: 'assistant', content: 'x' }, logprobs: null };
    expect(sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, plain] }, chat, opts)).toEqual([]);
    const items = [{ role: 'user', content: 'q' }, plain, { role: 'user', content: 'r' }, choice(chat, 'y')];
    const [seq] = sequencesOf({ messages_and_choices: items }, chat, opts);
    const prompt = ids(
      chat,
      '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nx<|im_end|>\n<|im_start|>user\nr<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(seq.tokens).toEqual([...prompt, ...ids(chat, 'y'), 2]);
  });

  it('trains plain assistant messages only with allow_training_without_logprobs', () => {
    const items = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'yes' },
    ];
    expect(sequencesOf({ messages_and_choices: items }, chat, opts)).toEqual([]);
    const [seq] = sequencesOf({ messages_and_choices: items }, chat, { trainWithoutLogprobs: true });
    const prompt = ids(chat, '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n');
    expect(seq.tokens).toEqual([...prompt, ...ids(chat, 'yes'), 2]);
    expect(seq.trainable.slice(prompt.length)).toEqual([...ids(chat, 'yes').map(() => 1), 1]);
    expect(seq.logprobs.every(Number.isNaN)).toBe(true);
  });

  it('renders tools into the prompt', () => {
    const tools = [{ type: 'function', function: { name: 'add', description: 'Adds', parameters: { type: 'object' } } }];
    const [seq] = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, choice(chat, 'a')], tools }, chat, opts);
    const text = chat.template.render({ messages: [{ role: 'user', content: 'q' }], tools, addGenerationPrompt: true });
    expect(text).toContain('"name": "add"');
    expect(seq.tokens.slice(0, -2)).toEqual(ids(chat, text));
  });

  it('puts a Qwen3 Choice that sampled its own <think> right after the generation prompt', () => {
    const sampled = '<think>\nhmm\n</think>\n\n42';
    const c = choice(qwen3, sampled);
    const [seq] = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, c] }, qwen3, opts);
    const prompt = ids(qwen3, '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n');
    expect(seq.tokens).toEqual([...prompt, ...ids(qwen3, sampled), 2]);
  });

  it('reads vocabulary-string logprob tokens and token_ids', () => {
    const five = ids(chat, '5');
    const byString = {
      finish_reason: 'stop',
      index: 0,
      message: { role: 'assistant', content: '5' },
      logprobs: {
        content: [
          { token: chat.tokenizer.idToToken(five[0])!, logprob: -1 },
          { token: '<|im_end|>', logprob: -2 },
        ],
      },
    };
    const [a] = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, byString] }, chat, opts);
    expect(a.tokens.slice(-2)).toEqual([...five, 2]);
    const byIds = {
      ...byString,
      token_ids: [...five, 2],
      logprobs: {
        content: [
          { token: '?', logprob: -1 },
          { token: '?', logprob: -2 },
        ],
      },
    };
    const [b] = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, byIds] }, chat, opts);
    expect(b.tokens).toEqual(a.tokens);
    expect(b.logprobs.slice(-2)).toEqual([-1, -2]);
    // Decoded text that is no vocabulary entry: re-encoded as a last resort, and counted.
    const decoded = { ...byString, logprobs: { content: [{ token: 'not-a-token-\u2603', logprob: -1 }] } };
    const last = tokenizeHistory({ messages_and_choices: [{ role: 'user', content: 'q' }, decoded] }, chat, opts);
    expect(last.notReproduced).toBe(1);
    expect(last.sequences[0].tokens.slice(a.tokens.length - 2)).toEqual(ids(chat, 'not-a-token-\u2603'));
    expect(tokenizeHistory({ messages_and_choices: [{ role: 'user', content: 'q' }, byString] }, chat, opts).notReproduced).toBe(0);
  });

  it('builds era-d sequences from prompt_token_ids + token_ids, append-only', () => {
    const c1 = { ...choice(chat, 'a'), prompt_token_ids: [10, 11, 12], token_ids: [20, 2] };
    const c2 = { ...choice(chat, 'b'), prompt_token_ids: [10, 11, 12, 20, 2, 13], token_ids: [21, 2] };
    const c3 = { ...choice(chat, 'c'), prompt_token_ids: [30, 31], token_ids: [22] };
    c1.logprobs.content = c1.logprobs.content.slice(0, 2);
    const seqs = sequencesOf({ messages_and_choices: [{ role: 'user', content: 'q' }, c1, c2, c3] }, chat, opts);
    expect(seqs.map((s) => s.tokens)).toEqual([
      [10, 11, 12, 20, 2, 13, 21, 2],
      [30, 31, 22],
    ]);
    expect(seqs[0].trainable).toEqual([0, 0, 0, 1, 1, 0, 1, 1]);
    expect(seqs[1].trainable).toEqual([0, 0, 1]);
    expect(seqs[0].logprobs[3]).toBe(-0.5);
    expect(Number.isNaN(seqs[1].logprobs[2])).toBe(true); // token_ids and logprobs lengths differ: unknown
  });
});
