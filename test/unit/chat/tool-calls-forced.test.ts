// Tool calls forced by tool_choice (a named function, "required"): the non-streamed message vLLM
// builds from the grammar-shaped output, and the stream in random pieces giving the same calls.
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../src/service/chat/output-parser';
import {
  NamedToolCallStream,
  RequiredToolCallsStream,
  namedToolCall,
  requiredToolCalls,
} from '../../../src/service/chat/tool-calls-forced';
import { counterIds, fold, pieces } from '../structured/stream-fold';

const call = (n: number, name: string, args: string): ToolCall => ({
  id: `chatcmpl-tool-${n.toString(16).padStart(32, '0')}`,
  type: 'function',
  function: { name, arguments: args },
});

describe('a named function', () => {
  it('the output, as written, is the arguments of one call; content is ""', () => {
    expect(namedToolCall('{"city" :"Oslo"}', 'get_weather', counterIds())).toEqual({
      content: '',
      toolCalls: [call(0, 'get_weather', '{"city" :"Oslo"}')],
    });
    expect(namedToolCall('', 'now', counterIds())).toEqual({ content: '', toolCalls: [call(0, 'now', '')] });
  });

  it('streams a first delta with id, type, name, then the text as arguments', () => {
    const text = '{"city": "Oslo", "days": 3}';
    for (const seed of [0, 1, 2, 3]) {
      const stream = new NamedToolCallStream('get_weather', counterIds());
      const folded = fold(stream, pieces(text, seed));
      expect(folded.toolCalls).toEqual([call(0, 'get_weather', text)]);
      expect(folded.content).toBeNull();
      expect(stream.calledTools).toBe(true);
    }
    const empty = fold(new NamedToolCallStream('now', counterIds()), []);
    expect(empty.toolCalls).toEqual([call(0, 'now', '')]);
  });
});

/** [name, output, calls] for tool_choice "required". */
const required: [string, string, ToolCall[]][] = [
  ['one call', '[{"name": "get_weather", "parameters": {"city": "Oslo"}}]', [call(0, 'get_weather', '{"city": "Oslo"}')]],
  [
    'two calls, parameters re-dumped',
    '[ {"name":"a","parameters":{"x":1.50,"y":[true,null]}} ,\n {"parameters": {}, "name": "b"} ]',
    [call(0, 'a', '{"x": 1.5, "y": [true, null]}'), call(1, 'b', '{}')],
  ],
  ['cut short by max_tokens: no calls', '[{"name": "get_weather", "parameters": {"ci', []],
  ['not an array: no calls', '{"name": "a", "parameters": {}}', []],
  ['an item without parameters: no calls', '[{"name": "a"}]', []],
];

describe('"required"', () => {
  it.each(required)('%s', (_name, text, calls) => {
    expect(requiredToolCalls(text, true, counterIds())).toEqual({ content: '', toolCalls: calls });
  });

  it.each(required.filter(([, , calls]) => calls.length > 0))('streamed in pieces: %s', (_name, text, calls) => {
    for (const seed of [0, 1, 2, 3, 4, 5]) {
      const stream = new RequiredToolCallsStream(true, counterIds());
      expect(fold(stream, pieces(text, seed)).toolCalls, `seed ${seed}`).toEqual(calls);
      expect(stream.calledTools).toBe(true);
    }
  });

  it('streams each call once its name is complete', () => {
    const stream = new RequiredToolCallsStream(true, counterIds());
    expect(stream.push('[{"name": "get_w')).toBeNull();
    expect(stream.push('eather", "parameters": {"city": "O')).toEqual({
      toolCalls: [{ index: 0, id: call(0, '', '').id, type: 'function', function: { name: 'get_weather', arguments: '{"city": "O' } }],
    });
    expect(stream.push('slo"}}, {"name": "b", "parameters": {}}]')).toEqual({
      toolCalls: [
        { index: 0, function: { arguments: 'slo"}' } },
        { index: 1, id: call(1, '', '').id, type: 'function', function: { name: 'b', arguments: '{}' } },
      ],
    });
    expect(stream.finish()).toBeNull();
  });

  it('parallel_tool_calls false keeps the first call', () => {
    const text = '[{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]';
    expect(requiredToolCalls(text, false, counterIds()).toolCalls).toEqual([call(0, 'a', '{}')]);
    expect(fold(new RequiredToolCallsStream(false, counterIds()), pieces(text, 2)).toolCalls).toEqual([call(0, 'a', '{}')]);
  });
});
