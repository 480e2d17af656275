// Mistral's [TOOL_CALLS] parser on hand-written model outputs, against what vLLM's mistral tool
// parser returns for each: the array form of tokenizers before v11 (first JSON value after the
// token, arguments re-dumped, `{}` when missing, the `[{...}]` fallback) and the v11 form
// (`name[ARGS]{...}` per token, arguments as written), content before the token or null, the whole
// output as content when the array cannot be read, parallel_tool_calls false, 9-character ids;
// and the stream, in random pieces, folding to the same message.
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../src/service/chat/output-parser';
import {
  MistralToolCallStream,
  extractMistralToolCalls,
  makeMistralToolCallId,
  type MistralCallFormat,
} from '../../../src/service/chat/tool-calls-mistral';
import { fold, pieces } from '../structured/stream-fold';

/** Deterministic Mistral-shaped ids: 9 alphanumerics. */
function mistralIds(): () => string {
  let n = 0;
  return () => `call${(n++).toString().padStart(5, '0')}`;
}

const call = (n: number, name: string, args: string): ToolCall => ({
  id: `call${n.toString().padStart(5, '0')}`,
  type: 'function',
  function: { name, arguments: args },
});

/** [name, format, output, content, calls]. */
const outputs: [string, MistralCallFormat, string, string | null, ToolCall[]][] = [
  ['no token: all content', 'array', 'Paris is sunny [today].', 'Paris is sunny [today].', []],
  [
    'array: one call, arguments re-dumped',
    'array',
    '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city":"Paris","days":2.50}}]',
    null,
    [call(0, 'get_weather', '{"city": "Paris", "days": 2.5}')],
  ],
  [
    'array: text before, two calls, a missing "arguments" is {}, text after the array ignored',
    'array',
    'Checking.[TOOL_CALLS][{"name": "a", "arguments": {"x": "caf\\u00e9"}}, {"name": "b"}] trailing words',
    'Checking.',
    [call(0, 'a', '{"x": "café"}'), call(1, 'b', '{}')],
  ],
  [
    'array: garbage before the array, read through the [{...}] fallback',
    'array',
    '[TOOL_CALLS] calls: [{"name": "f", "arguments": {"n": 1}}]',
    null,
    [call(0, 'f', '{"n": 1}')],
  ],
  [
    'array: an item without a string name is no call: all content',
    'array',
    'x[TOOL_CALLS] [{"name": 3, "arguments": {}}]',
    'x[TOOL_CALLS] [{"name": 3, "arguments": {}}]',
    [],
  ],
  ['array: cut short before a name: all content', 'array', '[TOOL_CALLS] [{"name": "get_w', '[TOOL_CALLS] [{"name": "get_w', []],
  ['array: an object, not an array: all content', 'array', '[TOOL_CALLS] {"name": "f"}', '[TOOL_CALLS] {"name": "f"}', []],
  [
    'array: only the text up to a second [TOOL_CALLS] is read',
    'array',
    '[TOOL_CALLS] [{"name": "f", "arguments": {}}][TOOL_CALLS] [{"name": "g", "arguments": {}}]',
    null,
    [call(0, 'f', '{}')],
  ],
  [
    'v11: two calls, [ARGS] dropped from the name, arguments as written',
    'named',
    'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"tz":-5 }',
    'Sure.',
    [call(0, 'get_weather', '{"city": "Paris"}'), call(1, 'get_time', '{"tz":-5 }')],
  ],
  [
    'v11: malformed arguments stay a call; a piece without "{" is skipped',
    'named',
    '[TOOL_CALLS]nothing here[TOOL_CALLS]f{"a": [1, 2',
    null,
    [call(0, 'f', '{"a": [1, 2')],
  ],
  [
    'v11: a [CALL_ID]id after the name (as the v11 template writes past calls) is not part of it',
    'named',
    '[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{"city": "Paris"}',
    null,
    [call(0, 'get_weather', '{"city": "Paris"}')],
  ],
  ['v11: a name that never reaches its arguments: no calls, no content', 'named', 'Hi[TOOL_CALLS]get_wea', 'Hi', []],
];

describe('extractMistralToolCalls and MistralToolCallStream', () => {
  for (const [name, format, output, content, calls] of outputs) {
    it(name, () => {
      const options = { format, parallelToolCalls: true, newId: mistralIds() };
      expect(extractMistralToolCalls(output, options)).toEqual({ content, toolCalls: calls });
      for (const seed of [0, 1, 2, 3, 4, 5]) {
        const folded = fold(new MistralToolCallStream({ ...options, newId: mistralIds() }), pieces(output, seed));
        expect({ seed, content: folded.content ?? '', toolCalls: folded.toolCalls }).toEqual({
          seed,
          content: content ?? '',
          toolCalls: calls,
        });
      }
    });
  }

  it('parallel_tool_calls false keeps the first call, streamed or not', () => {
    const texts: [MistralCallFormat, string][] = [
      ['array', '[TOOL_CALLS] [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]'],
      ['named', '[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{}'],
    ];
    for (const [format, text] of texts) {
      const options = { format, parallelToolCalls: false, newId: mistralIds() };
      expect(extractMistralToolCalls(text, options).toolCalls).toEqual([call(0, 'a', '{}')]);
      for (const seed of [0, 1, 2]) {
        expect(fold(new MistralToolCallStream({ ...options, newId: mistralIds() }), pieces(text, seed)).toolCalls).toEqual([
          call(0, 'a', '{}'),
        ]);
      }
    }
  });

  it('streams a call as soon as its name is known, and says so', () => {
    const stream = new MistralToolCallStream({ format: 'named', parallelToolCalls: true, newId: mistralIds() });
    expect(stream.push('Ok[TOOL_')).toEqual({ content: 'Ok' });
    expect(stream.push('CALLS]get_')).toBeNull();
    expect(stream.calledTools).toBe(false);
    expect(stream.push('weather[ARGS]{"ci')).toEqual({
      toolCalls: [{ index: 0, id: 'call00000', type: 'function', function: { name: 'get_weather', arguments: '{"ci' } }],
    });
    expect(stream.calledTools).toBe(true);
    expect(stream.push('ty": "Oslo"}')).toEqual({ toolCalls: [{ index: 0, function: { arguments: 'ty": "Oslo"}' } }] });
    expect(stream.finish()).toBeNull();
  });

  it('makes ids of 9 letters and digits, as Mistral requires', () => {
    const ids = Array.from({ length: 200 }, makeMistralToolCallId);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(new Set(ids).size).toBe(200);
    const { toolCalls } = extractMistralToolCalls('[TOOL_CALLS]f[ARGS]{}', { format: 'named', parallelToolCalls: true });
    expect(toolCalls[0].id).toMatch(/^[A-Za-z0-9]{9}$/);
  });
});
