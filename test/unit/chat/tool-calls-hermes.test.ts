// The Hermes tool-call parser on hand-written model outputs: what vLLM's parser returns for each
// (calls with re-dumped arguments and ids, content before the first tag or null, the whole output
// as content on any error, parallel_tool_calls false), and the stream in random pieces giving the
// same message, with the first delta of each call carrying id, type and name.
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../src/service/chat/output-parser';
import { HermesToolCallStream, extractHermesToolCalls } from '../../../src/service/chat/tool-calls-hermes';
import { makeToolCallId } from '../../../src/service/chat/tool-calls-object';
import { counterIds, fold, pieces } from '../structured/stream-fold';

const call = (n: number, name: string, args: string): ToolCall => ({
  id: `chatcmpl-tool-${n.toString(16).padStart(32, '0')}`,
  type: 'function',
  function: { name, arguments: args },
});

const weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>';

/** [output, content, calls] with ids from counterIds(). */
const outputs: [string, string, string | null, ToolCall[]][] = [
  ['plain text', 'Just an answer, no tools.', 'Just an answer, no tools.', []],
  ['empty output', '', '', []],
  ['one call (Qwen layout)', weather, null, [call(0, 'get_weather', '{"city": "Paris", "unit": "c"}')]],
  ['text before the call', `Let me check.\n${weather}`, 'Let me check.\n', [call(0, 'get_weather', '{"city": "Paris", "unit": "c"}')]],
  [
    'two calls, text between and after dropped',
    `${weather}\nand\n<tool_call>{"name":"get_time","arguments":{"tz":-5}}</tool_call> done`,
    null,
    [call(0, 'get_weather', '{"city": "Paris", "unit": "c"}'), call(1, 'get_time', '{"tz": -5}')],
  ],
  ['unclosed final tag', '<tool_call>\n{"name": "f", "arguments": {"x": [1, 2]}}\n', null, [call(0, 'f', '{"x": [1, 2]}')]],
  [
    'closed then unclosed',
    `${weather}<tool_call>{"name": "g", "arguments": {}}`,
    null,
    [call(0, 'get_weather', '{"city": "Paris", "unit": "c"}'), call(1, 'g', '{}')],
  ],
  [
    'arguments re-dumped: numbers, escapes, non-ASCII, nesting',
    '<tool_call>{"name":"f","arguments":{"a":1.0,"b":1e5,"c":"caf\\u00e9 \\"x\\"\\n","d":[],"e":{"f":{"g":null}},"h":-0,"i":123456789012345678901234567890,"j":true,"k":"日本"}}</tool_call>',
    null,
    [
      call(
        0,
        'f',
        '{"a": 1.0, "b": 100000.0, "c": "café \\"x\\"\\n", "d": [], "e": {"f": {"g": null}}, "h": 0, "i": 123456789012345678901234567890, "j": true, "k": "日本"}',
      ),
    ],
  ],
  [
    'arguments before name, extra keys',
    '<tool_call>{"arguments": {"q": "x"}, "id": 7, "name": "search", "extra": [1]}</tool_call>',
    null,
    [call(0, 'search', '{"q": "x"}')],
  ],
  ['arguments that are not an object', '<tool_call>{"name": "echo", "arguments": "hello"}</tool_call>', null, [call(0, 'echo', '"hello"')]],
  [
    'a tag inside an argument string',
    '<tool_call>{"name": "say", "arguments": {"text": "<tool_call> is a tag"}}</tool_call>',
    null,
    [call(0, 'say', '{"text": "<tool_call> is a tag"}')],
  ],
  ['a partial tag that never completes', 'I like <tool_', 'I like <tool_', []],
  ['text that only looks like a tag', 'a <tool_cal> b <tool_call', 'a <tool_cal> b <tool_call', []],
  ['invalid JSON: the whole output is content', 'Hmm <tool_call>{bad json}</tool_call>', 'Hmm <tool_call>{bad json}</tool_call>', []],
  ['no name', '<tool_call>{"arguments": {"a": 1}}</tool_call>', '<tool_call>{"arguments": {"a": 1}}</tool_call>', []],
  ['name not a string', '<tool_call>{"name": 5, "arguments": {}}</tool_call>', '<tool_call>{"name": 5, "arguments": {}}</tool_call>', []],
  [
    'a body that is an array',
    '<tool_call>[{"name": "f", "arguments": {}}]</tool_call>',
    '<tool_call>[{"name": "f", "arguments": {}}]</tool_call>',
    [],
  ],
  ['an empty body', 'x<tool_call></tool_call>', 'x<tool_call></tool_call>', []],
  [
    'extra data after the object',
    '<tool_call>{"arguments": {}, "name": "f"} {}</tool_call>',
    '<tool_call>{"arguments": {}, "name": "f"} {}</tool_call>',
    [],
  ],
  [
    'the end tag inside a string cuts the body',
    '<tool_call>{"arguments": {"t": "</tool_call>"}, "name": "f"}</tool_call>',
    '<tool_call>{"arguments": {"t": "</tool_call>"}, "name": "f"}</tool_call>',
    [],
  ],
];

describe('extractHermesToolCalls (non-streamed, as vLLM)', () => {
  it.each(outputs)('%s', (_name, text, content, calls) => {
    expect(extractHermesToolCalls(text, { parallelToolCalls: true, newId: counterIds() })).toEqual({ content, toolCalls: calls });
  });

  it('any bad body drops every call, valid ones included', () => {
    const text = `${weather}<tool_call>{"name": "x", "arguments": {oops}}</tool_call>`;
    expect(extractHermesToolCalls(text, { parallelToolCalls: true })).toEqual({ content: text, toolCalls: [] });
  });

  it('parallel_tool_calls false keeps the first call', () => {
    const text = `${weather}<tool_call>{"name": "g", "arguments": {}}</tool_call>`;
    expect(extractHermesToolCalls(text, { parallelToolCalls: false, newId: counterIds() }).toolCalls).toEqual([
      call(0, 'get_weather', '{"city": "Paris", "unit": "c"}'),
    ]);
  });

  it('ids are "chatcmpl-tool-" and 32 hex digits, each new', () => {
    const a = makeToolCallId();
    expect(a).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    expect(makeToolCallId()).not.toBe(a);
    const { toolCalls } = extractHermesToolCalls(`${weather}${weather}`, { parallelToolCalls: true });
    expect(toolCalls[0].id).not.toBe(toolCalls[1].id);
  });
});

describe('HermesToolCallStream: random pieces give the non-streamed message', () => {
  it.each(outputs)('%s', (_name, text, content, calls) => {
    for (const seed of [0, 1, 2, 3, 4, 5, 6, 7]) {
      const stream = new HermesToolCallStream({ parallelToolCalls: true, newId: counterIds() });
      const folded = fold(stream, pieces(text, seed));
      expect({ content: folded.content ?? '', toolCalls: folded.toolCalls }, `seed ${seed}`).toEqual({
        content: content ?? '',
        toolCalls: calls,
      });
      expect(stream.calledTools).toBe(calls.length > 0);
    }
  });

  it('parallel_tool_calls false: only the first call streams', () => {
    const text = `${weather} <tool_call>{"name": "g", "arguments": {}}</tool_call>`;
    for (const seed of [0, 1, 2]) {
      const folded = fold(new HermesToolCallStream({ parallelToolCalls: false, newId: counterIds() }), pieces(text, seed));
      expect(folded.toolCalls).toEqual([call(0, 'get_weather', '{"city": "Paris", "unit": "c"}')]);
    }
  });

  it('the name goes out as soon as it is complete, then the arguments in pieces', () => {
    const stream = new HermesToolCallStream({ parallelToolCalls: true, newId: counterIds() });
    expect(stream.push('Sure.\n<tool_')).toEqual({ content: 'Sure.\n' });
    expect(stream.push('call>\n{"name": "get_wea')).toBeNull();
    expect(stream.push('ther", "arguments": {"ci')).toEqual({
      toolCalls: [{ index: 0, id: call(0, '', '').id, type: 'function', function: { name: 'get_weather', arguments: '{' } }],
    });
    expect(stream.push('ty": "Par')).toEqual({ toolCalls: [{ index: 0, function: { arguments: '"city": "Par' } }] });
    expect(stream.push('is", "days": 1')).toEqual({ toolCalls: [{ index: 0, function: { arguments: 'is", "days": ' } }] });
    // A number is certain only once something follows it.
    expect(stream.push('0}}\n</tool_call>')).toEqual({ toolCalls: [{ index: 0, function: { arguments: '10}' } }] });
    expect(stream.finish()).toBeNull();
    expect(stream.calledTools).toBe(true);
  });

  it('a call broken after its name was sent keeps what was sent and drops the rest (vLLM streams it too)', () => {
    const text = '<tool_call>{"name": "f", "arguments": {"a": 1, oops}}</tool_call> tail';
    const folded = fold(new HermesToolCallStream({ parallelToolCalls: true, newId: counterIds() }), pieces(text, 3));
    expect(folded.toolCalls).toEqual([call(0, 'f', '{"a": 1')]);
    expect(folded.content).toBeNull();
    // Non-streamed, the same output is all content.
    expect(extractHermesToolCalls(text, { parallelToolCalls: true }).toolCalls).toEqual([]);
  });
});
