// The data of the demo model's JSON stage (scripts/demo/json-objects.ts): what the model is
// trained to write must be what Hearth's JSON grammars allow and what its parsers read back.
import { describe, expect, it } from 'vitest';
import { ADD_TOOL, addToolCall, compactJson, jsonRequests } from '../../../scripts/demo/json-objects';
import { requiredToolCalls } from '../../../src/service/chat/tool-calls-forced';

/** Hearth's default JSON layout: outside strings, whitespace only as one space after `:` and `,`. */
function isCompact(text: string): boolean {
  const outside = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return !/\s/.test(outside.replace(/([:,]) /g, '$1'));
}

describe('JSON stage data', () => {
  it('writes the compact layout, leaving strings as they are', () => {
    expect(compactJson({ a: 'x, y: "z"', b: [1, 2], c: [] as string[] })).toBe('{"a": "x, y: \\"z\\"", "b": [1, 2], "c": []}');
    expect(compactJson([{ a: 1 }, { b: 'c' }])).toBe('[{"a": 1}, {"b": "c"}]');
  });

  it('every reply is a closed object or array of objects in that layout, deterministic in the seed', () => {
    const requests = jsonRequests(400, 7);
    expect(jsonRequests(400, 7)).toEqual(requests);
    expect(jsonRequests(400, 8)).not.toEqual(requests);
    for (const { prompt, reply } of requests) {
      const value = JSON.parse(reply);
      expect(typeof value, reply).toBe('object');
      expect(compactJson(value)).toBe(reply);
      expect(isCompact(reply), reply).toBe(true);
      expect(prompt).toMatch(/JSON/);
    }
    // The person {name: string, age: integer, tags: string[]}, keys in that order, is the
    // most common reply; lists are arrays of objects, mostly of one.
    const persons = requests.filter((r) => /^\{"name": "[^"]+", "age": \d+, "tags": \["[^"]+"(, "[^"]+")*\]\}$/.test(r.reply));
    expect(persons.length).toBeGreaterThan(100);
    const lists = requests.map((r) => JSON.parse(r.reply)).filter(Array.isArray);
    expect(lists.length).toBeGreaterThan(20);
    expect(lists.filter((l) => l.length === 1).length).toBeGreaterThan(lists.length / 3);
  });

  it('the add tool call is what tool_choice "required" parses into one call', () => {
    const text = addToolCall(3, 14);
    expect(isCompact(text)).toBe(true);
    const { content, toolCalls } = requiredToolCalls(text, true, () => 'id');
    expect(content).toBe('');
    expect(toolCalls).toHaveLength(1);
    expect(toolCalls[0].function.name).toBe(ADD_TOOL.function.name);
    expect(JSON.parse(toolCalls[0].function.arguments)).toEqual({ a: 3, b: 14 });
  });
});
