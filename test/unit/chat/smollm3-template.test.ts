// SmolLM3's own chat template (fixtures/smollm3-3b.chat_template.jinja: HuggingFaceTB/SmolLM3-3B's
// chat_template, `/think` and `/no_think` flags in the system message or `enable_thinking`, tools as
// `xml_tools` with <tool_call> JSON answers, transformers' {% generation %} markers) rendered by
// Hearth's template engine, and its outputs through the chat service's parsers: reasoning is split
// at </think> only when the prompt left the block open (vLLM's prompt_is_reasoning_end), and the
// template's tool-call format is what the hermes parser reads.
// Not here: tokenisation (no npm package ships SmolLM3's tokenizer.json: Llama 3's vocabulary with
// its reserved special tokens renamed to <|im_start|>, <think>...).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/engine/model/chat-template';
import { reasoningApplies, splitReasoning } from '../../../src/service/chat/reasoning-parser';
import { extractHermesToolCalls } from '../../../src/service/chat/tool-calls-hermes';

const source = readFileSync(new URL('../model/fixtures/smollm3-3b.chat_template.jinja', import.meta.url), 'utf8');
const template = new ChatTemplate(source, { eos_token: '<|im_end|>' });
const applies = (promptText: string, enableThinking?: unknown) =>
  reasoningApplies({ templateSource: source, promptText, turnEnd: '<|im_end|>', enableThinking });

describe("SmolLM3's chat template with the reasoning and tool parsers", () => {
  it('thinks by default: the generation prompt leaves <think> to the model, and its output splits at </think>', () => {
    const prompt = template.render({ messages: [{ role: 'user', content: 'What is 2+3?' }], addGenerationPrompt: true });
    expect(prompt).toContain('Reasoning Mode: /think\n');
    expect(prompt.endsWith('<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect(applies(prompt)).toBe(true);
    expect(splitReasoning('<think>\n2 plus 3 is 5.\n</think>\nThe answer is 5.')).toEqual({
      reasoning: '\n2 plus 3 is 5.\n',
      content: '\nThe answer is 5.',
    });
  });

  it('"/no_think" in the system message (or enable_thinking false) closes the block in the prompt: no reasoning split', () => {
    const messages = [
      { role: 'system', content: 'Be brief. /no_think' },
      { role: 'user', content: 'Hi' },
    ];
    const prompt = template.render({ messages, addGenerationPrompt: true });
    expect(prompt).toContain('Reasoning Mode: /no_think\n');
    expect(prompt).toContain('## Custom Instructions\n\nBe brief.\n\n');
    expect(prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n')).toBe(true);
    expect(applies(prompt)).toBe(false);

    const off = template.render({
      messages: [{ role: 'user', content: 'Hi' }],
      addGenerationPrompt: true,
      kwargs: { enable_thinking: false },
    });
    expect(off.endsWith('<think>\n\n</think>\n')).toBe(true);
    expect(applies(off, false)).toBe(false);
    // "/think" wins over enable_thinking false when the system message asks for it.
    const on = template.render({
      messages: [
        { role: 'system', content: '/think' },
        { role: 'user', content: 'Hi' },
      ],
      addGenerationPrompt: true,
      kwargs: { enable_thinking: false },
    });
    expect(on.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(applies(on)).toBe(true);
  });

  it('earlier assistant turns without thinking carry an empty block; the current turn is judged alone', () => {
    const prompt = template.render({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'And now?' },
      ],
      addGenerationPrompt: true,
      kwargs: { enable_thinking: false },
    });
    expect(prompt).toContain('<|im_start|>assistant\n<think>\n\n</think>\nHello!<|im_end|>\n');
    expect(applies(prompt)).toBe(false);
  });

  // The template writes each tool with `tool | string`; @huggingface/jinja has no `string` filter for
  // objects (Python prints a dict's repr), so tools go in as their JSON text here.
  it('XML tools: the template lists them and asks for <tool_call> JSON, which the hermes parser reads', () => {
    const tool = {
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    };
    const prompt = template.render({
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      addGenerationPrompt: true,
      kwargs: { xml_tools: [JSON.stringify(tool)], enable_thinking: false },
    });
    expect(prompt).toContain(`<tools>\n${JSON.stringify(tool)}\n</tools>`);
    expect(prompt).toContain('### Tools\n\n');
    expect(prompt).toContain('<tools>\n');
    expect(prompt).toContain('get_weather');
    expect(prompt).toContain('<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>');
    const out = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const parsed = extractHermesToolCalls(out, { parallelToolCalls: true, newId: () => 'call_1' });
    expect(parsed.content).toBe('Let me check.\n');
    expect(parsed.toolCalls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
    ]);
  });
});
