// Mistral's own chat templates (mistral-common's tests/data/chat_templates/v3.jinja and v11.jinja,
// Apache-2.0, copied unchanged to test/unit/model/fixtures/mistral-common-v*.chat_template.jinja)
// rendered by Hearth's template engine, and the tool-call text they teach read back by the chat
// service's Mistral parser: v3 writes `[TOOL_CALLS][{"name", "arguments", "id"}]` (the array form),
// v11 writes `[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}` (the v11 form). The expected prompts are
// written by reading the templates (what transformers' apply_chat_template gives for them).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplate, type ChatMessage } from '../../../src/engine/model/text/chat-template';
import { extractMistralToolCalls } from '../../../src/service/chat/tool-calls-mistral';
import { chatOutputOptions, chatOutputParser } from '../../../src/service/chat/tool-calls-output-parser';
import { weatherTool } from './fixtures';

const fixture = (v: string) => readFileSync(new URL(`../model/fixtures/mistral-common-${v}.chat_template.jinja`, import.meta.url), 'utf8');
const v3 = fixture('v3');
const v11 = fixture('v11');
const tokens = { bos_token: '<s>', eos_token: '</s>' };

const available =
  '[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", ' +
  '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}][/AVAILABLE_TOOLS]';

/** A system message, a call with its result, an answer, and a new question. */
const conversation = (id: string): ChatMessage[] => [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
  },
  { role: 'tool', tool_call_id: id, content: '21' },
  { role: 'assistant', content: 'It is 21 C.' },
  { role: 'user', content: 'Thanks' },
];

describe("mistral-common's chat templates and the Mistral tool parser", () => {
  it('v3: tools before the last user turn, the system text folded into it, calls as an array, a numeric result as a number', () => {
    const text = new ChatTemplate(v3, tokens).render({
      messages: conversation('abcdefghi'),
      tools: [weatherTool],
      addGenerationPrompt: true,
    });
    const call = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]';
    expect(text).toBe(
      `<s>[INST]Weather in Paris?[/INST]${call}</s>[TOOL_RESULTS]{"content": 21, "call_id": "abcdefghi"}[/TOOL_RESULTS]` +
        `It is 21 C.</s>${available}[INST]Be brief.\n\nThanks[/INST]`,
    );
    // What the model learned to write is what the parser reads (the "id" key is not an argument).
    const options = chatOutputOptions(
      { tools: [weatherTool] },
      { templateSource: v3, promptText: text, turnEnd: '</s>', hasToken: () => false },
    );
    expect(options.tools).toEqual({ kind: 'auto', parallel: true, format: 'mistral' });
    const parsed = chatOutputParser(options).parse(call);
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls.map((c) => c.function)).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
  });

  it('v11: [SYSTEM_PROMPT], calls as name[CALL_ID]id[ARGS]arguments, results with [TOOL_CONTENT]', () => {
    const text = new ChatTemplate(v11, tokens).render({
      messages: conversation('abcdefghi'),
      tools: [weatherTool],
      addGenerationPrompt: true,
    });
    const call = '[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{"city": "Paris"}';
    expect(text).toBe(
      `<s>[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Weather in Paris?[/INST]${call}</s>` +
        `[TOOL_RESULTS]abcdefghi[TOOL_CONTENT]21[/TOOL_RESULTS]It is 21 C.</s>${available}[INST]Thanks[/INST]`,
    );
    const options = chatOutputOptions(
      { tools: [weatherTool] },
      { templateSource: v11, promptText: text, turnEnd: '</s>', hasToken: (t) => t === '[ARGS]' },
    );
    expect(options.tools).toEqual({ kind: 'auto', parallel: true, format: 'mistral-v11' });
    const parsed = chatOutputParser(options).parse(`${call}[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}`);
    expect(parsed.toolCalls.map((c) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"city": "Paris"}' },
      { name: 'get_weather', arguments: '{"city": "Rome"}' },
    ]);
  });

  it('the ids the parser makes go back through both templates; vLLM-style "chatcmpl-tool-" ids are refused by them', () => {
    for (const [source, format] of [
      [v3, 'array'],
      [v11, 'named'],
    ] as const) {
      const [call] = extractMistralToolCalls('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', {
        format: 'named',
        parallelToolCalls: true,
      }).toolCalls;
      const template = new ChatTemplate(source, tokens);
      expect(template.render({ messages: conversation(call.id), tools: [weatherTool] })).toContain(call.id);
      expect(() => template.render({ messages: conversation('chatcmpl-tool-0123456789abcdef'), tools: [weatherTool] }), format).toThrow(
        /9 characters/,
      );
    }
  });
});
