// The prompt of a chat request with the bundled models' real templates and tokenizers: tools
// and documents reach the template, generation prompt vs continue_final_message, the response
// role and echo text, add_special_tokens, truncation from the left, template errors as 400s.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServedModel } from '../../../src/engine/generate/types';
import { ChatRequestError } from '../../../src/service/chat/errors';
import { buildPrompt, maxPromptChars, toolForTemplate } from '../../../src/service/chat/prompt';
import type { ChatRequest } from '../../../src/service/chat/request';
import { servedModel } from './fixtures';

let chat: ServedModel;
let qwen3: ServedModel;
beforeAll(async () => {
  chat = await servedModel('tiny-chat');
  qwen3 = await servedModel('tiny-qwen3');
});

const user = (content: string) => ({ role: 'user', content });
const prompt = (req: Partial<ChatRequest>, m = chat) => buildPrompt({ messages: [user('Hi')], ...req }, m);

describe('buildPrompt', () => {
  it('renders with the generation prompt and tokenises without extra special tokens', () => {
    const p = prompt({});
    expect(p.text).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    expect(p.tokenIds).toEqual(chat.tokenizer.encode(p.text, { addSpecialTokens: false }));
    expect(p.role).toBe('assistant');
    expect(p.echo).toBe('');
    expect(prompt({ add_generation_prompt: false }).text).toBe('<|im_start|>user\nHi<|im_end|>\n');
  });

  it('continues the final message, whose role the reply takes, and echoes it', () => {
    const p = prompt({ messages: [user('Count'), { role: 'assistant', content: 'One, two' }], continue_final_message: true, echo: true });
    expect(p.text).toBe('<|im_start|>user\nCount<|im_end|>\n<|im_start|>assistant\nOne, two');
    expect(p.role).toBe('assistant');
    expect(p.echo).toBe('One, two');
    // With a generation prompt the last message is the user's: nothing to echo.
    expect(prompt({ echo: true }).echo).toBe('');
    const custom = prompt({
      messages: [
        user('a'),
        {
          role: 'narrator',
          content: [
            { type: 'text', text: 'x' },
            { type: 'text', text: 'y' },
          ],
        },
      ],
      add_generation_prompt: false,
      echo: true,
    });
    expect(custom.role).toBe('narrator');
    expect(custom.echo).toBe('x\ny');
  });

  it('passes tools (as pydantic dumps them), documents and template kwargs', () => {
    const tool = { type: 'function', function: { name: 'add', parameters: { type: 'object' }, strict: true } };
    expect(toolForTemplate(tool)).toEqual({
      type: 'function',
      function: { name: 'add', description: null, parameters: { type: 'object' }, strict: true },
    });
    const p = prompt({ tools: [tool], documents: [{ title: 'Doc', text: 'Body text' }] });
    expect(p.text).toContain(
      '<tools>\n{"type": "function", "function": {"name": "add", "description": null, "parameters": {"type": "object"}, "strict": true}}\n</tools>',
    );
    expect(p.text).toContain('Title: Doc\nBody text');
    const thinking = buildPrompt({ messages: [user('Hi')], chat_template_kwargs: { enable_thinking: false } }, qwen3).text;
    expect(thinking).not.toBe(buildPrompt({ messages: [user('Hi')] }, qwen3).text);
    expect(thinking).toContain('<think>');
  });

  it('uses a request chat_template, and refuses broken templates and contents as 400s', () => {
    expect(prompt({ chat_template: '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}' }).text).toBe('[user]Hi');
    expect(() => prompt({ chat_template: '{% for %}' })).toThrow(ChatRequestError);
    expect(() => prompt({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] })).toThrow(
      /takes only text parts/,
    );
    expect(() => prompt({ chat_template: '' })).toThrow(/cannot be empty/);
  });

  it('adds special tokens on request and truncates from the left', () => {
    const full = prompt({});
    const kept = prompt({ truncate_prompt_tokens: 3 });
    expect(kept.tokenIds).toEqual(full.tokenIds.slice(-3));
    expect(prompt({ truncate_prompt_tokens: -1 }).tokenIds).toEqual(full.tokenIds);
    // tiny-chat's post-processor adds nothing, so both agree; the flag still reaches the tokenizer.
    expect(prompt({ add_special_tokens: true }).tokenIds).toEqual(chat.tokenizer.encode(full.text, { addSpecialTokens: true }));
  });

  it('refuses a prompt over 8 characters per token of context before tokenising, naming the limit (issue 26)', () => {
    const max = maxPromptChars(chat.maxModelLen);
    expect(max).toBe(chat.maxModelLen * 8);
    const refusal = (req: Partial<ChatRequest>) => {
      try {
        prompt(req);
      } catch (e) {
        return e;
      }
      throw new Error('accepted');
    };
    // 10 M CJK characters: refused from the messages' length, before the template or the tokenizer runs.
    const huge = refusal({ messages: [user('\u4e2d'.repeat(10_000_000))] });
    expect(huge).toBeInstanceOf(ChatRequestError);
    expect(huge).toMatchObject({ param: 'messages' });
    expect((huge as Error).message).toBe(
      `The prompt has 10000000 characters; this model's maximum context length is ${chat.maxModelLen} tokens, so a prompt may have at most ${max} characters (8 per token), checked before tokenising. Please reduce the length of the input messages.`,
    );
    // Text parts count as content strings do; truncate_prompt_tokens does not lift the limit.
    expect(refusal({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(max + 1) }] }] })).toMatchObject({
      message: expect.stringMatching(/^The prompt has \d+ characters/),
    });
    expect(refusal({ messages: [user('x'.repeat(max + 1))], truncate_prompt_tokens: 10 })).toBeInstanceOf(ChatRequestError);
    // Messages within the limit whose rendering passes it (the template adds its markers) are refused from the rendered text.
    const rendered = refusal({ messages: [user('x'.repeat(max - 5))] });
    expect((rendered as Error).message).toMatch(
      new RegExp(`^The prompt has ${max - 5 + prompt({ messages: [user('')] }).text.length} characters`),
    );
    // At the limit a prompt is tokenised and meets the context-length rule as before.
    expect(prompt({ messages: [user('hi '.repeat(Math.floor((max - 100) / 3)))] }).tokenIds.length).toBeGreaterThan(0);
  });
});
