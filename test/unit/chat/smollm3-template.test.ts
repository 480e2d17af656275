// SmolLM3's own chat template (fixtures/smollm3-3b.chat_template.jinja: HuggingFaceTB/SmolLM3-3B's
// chat_template, `/think` and `/no_think` flags in the system message or `enable_thinking`, tools as
// `xml_tools` with <tool_call> JSON answers, transformers' {% generation %} markers) rendered by
// Hearth's template engine, and its outputs through the chat service's parsers: reasoning is split
// at </think> only when the prompt left the block open (vLLM's prompt_is_reasoning_end), and the
// template's tool-call format is what the hermes parser reads.
// Then the chat service end to end on that template (prompt, output options, plan, response and
// stream): no npm package ships SmolLM3's tokenizer.json (Llama 3's vocabulary with its reserved
// special tokens renamed to <|im_start|>, <think>, <tool_call>...), so tiny-qwen3's tokenizer, which
// has the same special token texts, stands in for it.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServedModel } from '../../../src/engine/generate/types';
import { ChatTemplate, ChatTemplates } from '../../../src/engine/model/text/chat-template';
import { reasoningApplies, splitReasoning } from '../../../src/service/chat/reasoning-parser';
import type { ChatRequest } from '../../../src/service/chat/request';
import { extractHermesToolCalls } from '../../../src/service/chat/tool-calls-hermes';
import { runChat, servedModel, weatherTool } from './fixtures';

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

  // The template writes each tool with `tool | string`: Python's str() of the dict (template-python.ts).
  it('XML tools: the template lists them and asks for <tool_call> JSON, which the hermes parser reads', () => {
    const tool = {
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    };
    const prompt = template.render({
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      addGenerationPrompt: true,
      kwargs: { xml_tools: [tool], enable_thinking: false },
    });
    expect(prompt).toContain(
      '### Tools\n\nYou may call one or more functions to assist with the user query.\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n\n<tools>\n' +
        "{'type': 'function', 'function': {'name': 'get_weather', 'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}}}}\n" +
        '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n\n<|im_end|>\n',
    );
    const out = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const parsed = extractHermesToolCalls(out, { parallelToolCalls: true, newId: () => 'call_1' });
    expect(parsed.content).toBe('Let me check.\n');
    expect(parsed.toolCalls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
    ]);
  });
});

describe('SmolLM3 through the chat service: /think, /no_think and XML tool calls', () => {
  let served: ServedModel;
  beforeAll(async () => {
    const qwen3 = await servedModel('tiny-qwen3');
    served = { ...qwen3, id: 'HuggingFaceTB/SmolLM3-3B', chatTemplates: new ChatTemplates(null, source, qwen3.tokenizer.specialTokens) };
  });
  /** The message and finish reason of a request whose model writes `output`, non-streamed and streamed (rebuilt). */
  async function complete(req: ChatRequest, output: string) {
    const { prompt, response, chunks } = await runChat(served, req, output);
    const { message, finish_reason } = response.choices[0];
    const deltas = chunks.map((c) => c.choices[0]).filter((c) => c !== undefined);
    const streamed = {
      content: deltas.map((d) => d.delta.content ?? '').join(''),
      reasoning: deltas.map((d) => d.delta.reasoning_content ?? '').join(''),
      calls: deltas.flatMap((d) => d.delta.tool_calls ?? []),
      finish: deltas.find((d) => d.finish_reason)?.finish_reason,
    };
    return { prompt, message, finish_reason, streamed };
  }

  it('thinking by default: reasoning_content and content, streamed the same', async () => {
    const r = await complete(
      { messages: [{ role: 'user', content: 'What is 2+3?' }] },
      '<think>\n2 plus 3 is 5.\n</think>\nThe answer is 5.',
    );
    expect(r.message.reasoning_content).toBe('\n2 plus 3 is 5.\n');
    expect(r.message.content).toBe('\nThe answer is 5.');
    expect(r.streamed).toMatchObject({ reasoning: '\n2 plus 3 is 5.\n', content: '\nThe answer is 5.', finish: 'stop' });
  });

  it('"/no_think" in the system message: the whole output is content', async () => {
    const messages = [
      { role: 'system', content: 'Be brief. /no_think' },
      { role: 'user', content: 'Hi' },
    ];
    const r = await complete({ messages }, 'Hello!');
    expect(r.prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n')).toBe(true);
    expect(r.message).toMatchObject({ content: 'Hello!', reasoning_content: null });
    expect(r.streamed).toMatchObject({ content: 'Hello!', reasoning: '' });
  });

  it('xml_tools listed in the prompt; the reasoning, then a <tool_call> answer, become reasoning and tool_calls', async () => {
    const req: ChatRequest = {
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weatherTool],
      chat_template_kwargs: { xml_tools: [weatherTool] },
    };
    const output =
      '<think>\nI need the weather tool.\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const r = await complete(req, output);
    expect(r.prompt).toContain("<tools>\n{'type': 'function', 'function': {'name': 'get_weather', 'description': 'Get the weather', ");
    expect(r.message.reasoning_content).toBe('\nI need the weather tool.\n');
    expect(r.message.content).toBe('\n');
    expect(r.message.tool_calls.map((c) => c.function)).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(r.finish_reason).toBe('tool_calls');
    expect(r.streamed.reasoning).toBe('\nI need the weather tool.\n');
    expect(r.streamed.calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(r.streamed.calls.map((c) => c.function?.arguments ?? '').join('')).toBe('{"city": "Paris"}');
    expect(r.streamed.finish).toBe('tool_calls');
  });
});
