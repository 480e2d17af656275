// The <think> reasoning split on hand-written outputs, streamed in random pieces and not, and the
// decision whether a request is split at all (template, enable_thinking, a block the prompt closed).
import { describe, expect, it } from 'vitest';
import { ReasoningStream, reasoningApplies, splitReasoning } from '../../../src/service/chat/reasoning-parser';
import { pieces } from '../structured/stream-fold';

/** [output, reasoning, content]. */
const outputs: [string, string, string | null][] = [
  ['<think>\nThe user greets me.\n</think>\n\nHello!', '\nThe user greets me.\n', '\n\nHello!'],
  ['The template opened the block.</think>Answer.', 'The template opened the block.', 'Answer.'],
  ['\n  <think>x</think>y', 'x', 'y'],
  ['<think></think>Only content', '', 'Only content'],
  ['<think>\n\n</think>\n\n', '\n\n', '\n\n'],
  ['<think>cut short by max_tokens', 'cut short by max_tokens', null],
  ['no tags at all', 'no tags at all', null],
  ['', '', null],
  ['<think>a</think>b</think>c', 'a', 'b</think>c'],
  ['<think>one <think> two</think>three', 'one <think> two', 'three'],
  ['text <think>late</think> after', 'text <think>late', ' after'],
  ['<thi', '<thi', null],
  ['reasoning </thin', 'reasoning </thin', null],
  ['<think>é 😀 日本</think>ü', 'é 😀 日本', 'ü'],
];

describe('splitReasoning', () => {
  it.each(outputs)('%j', (text, reasoning, content) => {
    expect(splitReasoning(text)).toEqual({ reasoning, content });
  });
});

describe('ReasoningStream: random pieces give the same split; the delta holding </think> is split', () => {
  it.each(outputs)('%j', (text, reasoning, content) => {
    for (const seed of [0, 1, 2, 3, 4, 5, 6]) {
      const stream = new ReasoningStream();
      let r = '';
      let c: string | null = null;
      for (const part of [...pieces(text, seed), null]) {
        const d = part === null ? stream.finish() : stream.push(part);
        if (d?.reasoning) r += d.reasoning;
        if (d?.content) c = (c ?? '') + d.content;
      }
      expect({ r, c }, `seed ${seed}`).toEqual({ r: reasoning, c: content });
    }
  });

  it('splits one delta into its reasoning and content parts', () => {
    const stream = new ReasoningStream();
    expect(stream.push('<think>')).toBeNull();
    expect(stream.push('plan')).toEqual({ reasoning: 'plan' });
    expect(stream.push(' done</think>Hi')).toEqual({ reasoning: ' done', content: 'Hi' });
    expect(stream.push(' there')).toEqual({ content: ' there' });
    expect(stream.finish()).toBeNull();
  });

  it('holds back a possible partial </think> until the next delta decides', () => {
    const stream = new ReasoningStream();
    expect(stream.push('a</th')).toEqual({ reasoning: 'a' });
    expect(stream.push('ink>b')).toEqual({ content: 'b' });
    const other = new ReasoningStream();
    expect(other.push('a</th')).toEqual({ reasoning: 'a' });
    expect(other.push('e end')).toEqual({ reasoning: '</the end' });
  });
});

describe('reasoningApplies', () => {
  const qwen3 = "{{- '<think>\\n\\n</think>\\n\\n' }} ... reasoning_content ... </think>";
  const plain = '{{- message.content }}';
  it('needs a template that thinks', () => {
    expect(reasoningApplies({ templateSource: plain, promptText: '<|im_start|>assistant\n', turnEnd: '<|im_end|>' })).toBe(false);
    expect(
      reasoningApplies({
        templateSource: qwen3,
        promptText: '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
        turnEnd: '<|im_end|>',
      }),
    ).toBe(true);
  });

  it("off with enable_thinking false, or when the prompt already closed this turn's block", () => {
    const open = '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';
    expect(reasoningApplies({ templateSource: qwen3, promptText: open, turnEnd: '<|im_end|>', enableThinking: false })).toBe(false);
    expect(reasoningApplies({ templateSource: qwen3, promptText: `${open}<think>\n\n</think>\n\n`, turnEnd: '<|im_end|>' })).toBe(false);
    // A template that opens the block itself: the output starts in reasoning.
    expect(reasoningApplies({ templateSource: qwen3, promptText: `${open}<think>\n`, turnEnd: '<|im_end|>' })).toBe(true);
    // Earlier turns' closed blocks do not count.
    const earlier =
      '<|im_start|>assistant\n<think>\nx\n</think>\n\ncall<|im_end|>\n<|im_start|>user\n<tool_response>\n1\n</tool_response><|im_end|>\n<|im_start|>assistant\n';
    expect(reasoningApplies({ templateSource: qwen3, promptText: earlier, turnEnd: '<|im_end|>' })).toBe(true);
    expect(reasoningApplies({ templateSource: qwen3, promptText: earlier, turnEnd: null })).toBe(false);
  });
});
