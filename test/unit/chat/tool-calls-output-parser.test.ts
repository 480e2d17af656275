// The chat output parser a request gets: reasoning split first, tool calls parsed from the content
// after it, include_reasoning, the request -> options mapping on the bundled models' real chat
// templates (tiny-qwen3 thinks and calls tools; tiny-qwen2 calls tools), and streams in random
// pieces folding to the non-streamed message.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServedModel } from '../../../src/engine/generate/types';
import type { ChatRequest } from '../../../src/service/chat/request';
import { chatOutputOptions, chatOutputParser, type ChatOutputOptions } from '../../../src/service/chat/tool-calls-output-parser';
import { servedModel } from './fixtures';
import { asStreamed, counterIds, fold, foldedAsStreamed, pieces } from '../structured/stream-fold';

let qwen3: ServedModel;
let qwen2: ServedModel;
beforeAll(async () => {
  qwen3 = await servedModel('tiny-qwen3');
  qwen2 = await servedModel('tiny-qwen2');
});

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

/** The options and rendered prompt of a request on a model, as the chat pipeline will build them. */
function optionsFor(model: ServedModel, req: Partial<ChatRequest>): ChatOutputOptions {
  const template = model.chatTemplates.forRequest({ hasTools: !!req.tools });
  const promptText = template.render({
    messages: req.messages ?? [{ role: 'user', content: 'Weather in Oslo?' }],
    tools: req.tools ?? null,
    addGenerationPrompt: true,
    kwargs: req.chat_template_kwargs ?? {},
  });
  return chatOutputOptions(req, { templateSource: template.source, promptText, turnEnd: model.tokenizer.specialTokens.eos_token ?? null });
}

describe('chatOutputOptions on the bundled templates', () => {
  it('tiny-qwen3 thinks unless enable_thinking is false; tools "auto" unless a choice says otherwise', () => {
    expect(optionsFor(qwen3, { tools: tools })).toEqual({
      reasoning: true,
      includeReasoning: true,
      tools: { kind: 'auto', parallel: true, format: 'hermes' },
    });
    expect(optionsFor(qwen3, { chat_template_kwargs: { enable_thinking: false } })).toEqual({
      reasoning: false,
      includeReasoning: true,
      tools: { kind: 'none' },
    });
    expect(optionsFor(qwen3, { include_reasoning: false, tools: tools, tool_choice: 'required', parallel_tool_calls: false })).toEqual({
      reasoning: true,
      includeReasoning: false,
      tools: { kind: 'required', parallel: false },
    });
    expect(optionsFor(qwen3, { tools: tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }).tools).toEqual({
      kind: 'named',
      name: 'get_weather',
    });
    expect(optionsFor(qwen3, { tools: tools, tool_choice: 'none' }).tools).toEqual({ kind: 'none' });
  });

  it('a template that writes [TOOL_CALLS] gets the Mistral parser (v11 when the vocabulary has [ARGS]), Mistral ids and special tokens kept', () => {
    const model = (hasArgs: boolean) => ({
      templateSource: '{{ bos_token }}{% for m in messages %}[INST]{{ m.content }}[/INST]{% endfor %}{# [TOOL_CALLS] #}',
      promptText: '<s>[INST]Weather in Oslo?[/INST]',
      turnEnd: '</s>',
      hasToken: (t: string) => hasArgs && t === '[ARGS]',
    });
    const v3 = chatOutputOptions({ tools: tools }, model(false));
    expect(v3.tools).toEqual({ kind: 'auto', parallel: true, format: 'mistral' });
    expect(v3.keepSpecialTokens).toBe(true);
    expect(v3.newToolCallId!()).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(chatOutputOptions({ tools: tools, parallel_tool_calls: false }, model(true)).tools).toEqual({
      kind: 'auto',
      parallel: false,
      format: 'mistral-v11',
    });
    const required = chatOutputOptions({ tools: tools, tool_choice: 'required' }, model(true));
    expect(required.keepSpecialTokens).toBeUndefined();
    expect(required.newToolCallId!()).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(optionsFor(qwen2, { tools: tools }).keepSpecialTokens).toBeUndefined();
  });

  it('tiny-qwen2 has no reasoning; multi-turn tool conversations keep reasoning on for the new turn', () => {
    expect(optionsFor(qwen2, { tools: tools })).toEqual({
      reasoning: false,
      includeReasoning: true,
      tools: { kind: 'auto', parallel: true, format: 'hermes' },
    });
    const messages = [
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: '',
        reasoning_content: 'I need the tool.',
        tool_calls: [{ id: 'chatcmpl-tool-1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'chatcmpl-tool-1', content: '{"temp": 3}' },
    ];
    expect(optionsFor(qwen3, { messages, tools: tools }).reasoning).toBe(true);
  });
});

/** [name, options, output, expected message]. */
const cases: [
  string,
  ChatOutputOptions,
  string,
  { content: string | null; reasoning: string | null; toolCalls: { name: string; arguments: string }[] },
][] = [
  [
    'reasoning then a Hermes call',
    { reasoning: true, includeReasoning: true, tools: { kind: 'auto', parallel: true, format: 'hermes' } },
    '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    { content: '\n\n', reasoning: '\nThe user wants the weather.\n', toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] },
  ],
  [
    'a tool call inside the reasoning is not a call',
    { reasoning: true, includeReasoning: true, tools: { kind: 'auto', parallel: true, format: 'hermes' } },
    '<think>maybe <tool_call>{"name": "x", "arguments": {}}</tool_call>?</think>It is sunny.',
    { content: 'It is sunny.', reasoning: 'maybe <tool_call>{"name": "x", "arguments": {}}</tool_call>?', toolCalls: [] },
  ],
  [
    'include_reasoning false drops the reasoning only',
    { reasoning: true, includeReasoning: false, tools: { kind: 'none' } },
    '<think>secret</think>Answer',
    { content: 'Answer', reasoning: null, toolCalls: [] },
  ],
  [
    'reasoning cut short',
    { reasoning: true, includeReasoning: true, tools: { kind: 'auto', parallel: true, format: 'hermes' } },
    '<think>still thinking',
    { content: null, reasoning: 'still thinking', toolCalls: [] },
  ],
  [
    'no reasoning parser: tags are content',
    { reasoning: false, includeReasoning: true, tools: { kind: 'none' } },
    '<think>a</think>b',
    { content: '<think>a</think>b', reasoning: null, toolCalls: [] },
  ],
  [
    'a named call after reasoning',
    { reasoning: true, includeReasoning: true, tools: { kind: 'named', name: 'get_weather' } },
    'Oslo it is.</think>{"city": "Oslo"}',
    { content: '', reasoning: 'Oslo it is.', toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] },
  ],
  [
    '"required" calls',
    { reasoning: false, includeReasoning: true, tools: { kind: 'required', parallel: true } },
    '[{"name": "get_weather", "parameters": {"city":"Oslo"}}, {"name": "get_weather", "parameters": {"city":"Rome"}}]',
    {
      content: '',
      reasoning: null,
      toolCalls: [
        { name: 'get_weather', arguments: '{"city": "Oslo"}' },
        { name: 'get_weather', arguments: '{"city": "Rome"}' },
      ],
    },
  ],
  [
    'reasoning then a Mistral v11 call ([TOOL_CALLS] read only after </think>)',
    { reasoning: true, includeReasoning: true, tools: { kind: 'auto', parallel: true, format: 'mistral-v11' } },
    '<think>[TOOL_CALLS]not yet</think>Calling.[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}',
    { content: 'Calling.', reasoning: '[TOOL_CALLS]not yet', toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] },
  ],
  [
    'plain content',
    { reasoning: false, includeReasoning: true, tools: { kind: 'none' } },
    'Hello 😀',
    { content: 'Hello 😀', reasoning: null, toolCalls: [] },
  ],
];

describe('chatOutputParser', () => {
  it.each(cases)('%s: non-streamed', (_name, options, text, expected) => {
    const parsed = chatOutputParser({ ...options, newToolCallId: counterIds() }).parse(text);
    expect({ content: parsed.content, reasoning: parsed.reasoning, toolCalls: parsed.toolCalls.map((c) => c.function) }).toEqual(expected);
    for (const c of parsed.toolCalls) {
      expect(c.type).toBe('function');
      expect(c.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    }
  });

  it.each(cases)('%s: streamed in random pieces, the same message', (_name, options, text) => {
    const expected = asStreamed(chatOutputParser({ ...options, newToolCallId: counterIds() }).parse(text));
    for (const seed of [0, 1, 2, 3, 4, 5, 6, 7, 8]) {
      const stream = chatOutputParser({ ...options, newToolCallId: counterIds() }).stream();
      const folded = fold(stream, pieces(text, seed));
      expect(foldedAsStreamed(folded), `seed ${seed}`).toEqual(expected);
      expect(stream.calledTools).toBe(expected.toolCalls.length > 0);
      if (!options.includeReasoning) expect(folded.deltas.some((d) => d.reasoning !== undefined)).toBe(false);
    }
  });
});
