// JSON as vLLM's Python reads and re-dumps tool-call arguments: json.loads' rules, json.dumps'
// layout and number forms, and the incremental reader + writer giving the same text in any
// chunking.
import { describe, expect, it } from 'vitest';
import { JsonEventReader, JsonSyntaxError, canonicalString } from '../../../src/service/chat/tool-calls-json';
import { CanonicalWriter, dumps, loads } from '../../../src/service/chat/tool-calls-json-values';
import { pieces } from '../structured/stream-fold';

/** Re-dumps through the incremental reader, fed in pieces. */
function streamDumps(text: string, seed: number): string {
  const writer = new CanonicalWriter();
  let out = '';
  const reader = new JsonEventReader({
    startObject: () => writer.startObject(),
    endObject: () => writer.endObject(),
    startArray: () => writer.startArray(),
    endArray: () => writer.endArray(),
    key: (k) => writer.key(k),
    stringStart: () => writer.stringStart(),
    stringPiece: (t) => writer.stringPiece(t),
    stringEnd: () => writer.stringEnd(),
    scalar: (t) => writer.scalar(t),
  });
  for (const part of pieces(text, seed, 3)) {
    reader.push(part);
    out += writer.take();
  }
  reader.end();
  return out + writer.take();
}

// [input, json.dumps(json.loads(input), ensure_ascii=False)] as CPython 3.12 prints them (but a lone
// surrogate, which CPython writes raw and then cannot encode as UTF-8, is escaped).
const cases: [string, string][] = [
  ['{"city":"Paris","days":3}', '{"city": "Paris", "days": 3}'],
  [' {\n  "a" : [1,2 , {"b":null}] ,"c":true }\n', '{"a": [1, 2, {"b": null}], "c": true}'],
  [
    '{"f": 1.0, "g": 1e5, "h": 1E-7, "i": 0.1, "j": -0, "k": -0.0, "l": 1e16, "m": 123.456e2}',
    '{"f": 1.0, "g": 100000.0, "h": 1e-07, "i": 0.1, "j": 0, "k": -0.0, "l": 1e+16, "m": 12345.6}',
  ],
  [
    '{"big": 123456789012345678901234567890, "neg": -42, "inf": 1e400}',
    '{"big": 123456789012345678901234567890, "neg": -42, "inf": Infinity}',
  ],
  ['[NaN, Infinity, -Infinity]', '[NaN, Infinity, -Infinity]'],
  ['{"s": "caf\\u00e9 é \\n\\t\\"q\\" \\\\ \\/ \\u0001 \\ud83d\\ude00 😀"}', '{"s": "café é \\n\\t\\"q\\" \\\\ / \\u0001 😀 😀"}'],
  ['{"1": "a", "b": "c", "0": "d"}', '{"1": "a", "b": "c", "0": "d"}'],
  ['{"a": 1, "b": 2, "a": 3}', '{"a": 3, "b": 2}'],
  ['{}', '{}'],
  ['[]', '[]'],
  ['{"e": {}, "f": [[], [{}]]}', '{"e": {}, "f": [[], [{}]]}'],
  ['"just a string"', '"just a string"'],
  ['17', '17'],
  ['{"lone": "\\ud800x"}', '{"lone": "\\ud800x"}'],
];

describe('json.loads + json.dumps', () => {
  it.each(cases)('%s', (input, expected) => {
    expect(dumps(loads(input))).toBe(expected);
  });

  it.each(cases.filter(([input]) => !input.includes('"a": 1, "b": 2, "a"')))('in pieces: %s', (input, expected) => {
    for (const seed of [1, 2, 3, 4, 5]) expect(streamDumps(input, seed)).toBe(expected);
  });

  it.each([
    ['{"a": 1,}', 'Expecting property name enclosed in double quotes'],
    ["{'a': 1}", 'Expecting property name enclosed in double quotes'],
    ['{"a" 1}', "Expecting ':' delimiter"],
    ['[1 2]', "Expecting ',' delimiter"],
    ['{"a": "line\nbreak"}', 'Invalid control character'],
    ['{"a": "\\x41"}', 'Invalid \\escape'],
    ['{"a": "\\u00g0"}', 'Invalid \\uXXXX escape'],
    ['{"a": 01}', 'bad number'],
    ['{"a": .5}', 'Expecting value'],
    ['{"a": nan}', 'Expecting value'],
    ['{"a": tru}', 'Expecting value'],
    ['{"a": 1.5.2}', 'bad number'],
    ['{"a": 1} x', 'Extra data'],
    ['{"a": 1} {"b": 2}', 'Extra data'],
    ['{"a": [1, 2}', "Expecting ',' delimiter"],
    ['{"a": 1', 'ends early'],
    ['', 'ends early'],
  ])('refuses %j', (input, message) => {
    expect(() => loads(input)).toThrow(JsonSyntaxError);
    expect(() => loads(input)).toThrow(message);
  });

  it('fails at the first character no JSON can continue with, before the input ends', () => {
    const reader = new JsonEventReader({
      startObject() {},
      endObject() {},
      startArray() {},
      endArray() {},
      key() {},
      stringStart() {},
      stringPiece() {},
      stringEnd() {},
      scalar() {},
    });
    reader.push('{"a": [1, ');
    expect(() => reader.push('}')).toThrow(JsonSyntaxError);
  });

  it('canonicalString escapes as json.dumps(ensure_ascii=False) does', () => {
    expect(canonicalString('a"b\\c\n\r\t\b\f\u0000\u001f\u007f\u2028é😀')).toBe('"a\\"b\\\\c\\n\\r\\t\\b\\f\\u0000\\u001f\u007f\u2028é😀"');
  });
});
