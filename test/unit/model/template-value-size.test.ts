// The size bounds the template budget checks before a value is printed (issue 26) are upper
// bounds on what @huggingface/jinja then writes, and tight ones: on random nested values (strings
// with quotes, escapes, control, non-ASCII and lone surrogate characters, numbers, booleans, null, lists, dicts,
// shared references), `tojson` with and without indent, separators and ensure_ascii, and plain
// printing, each bound is at least the library's length and above it by no more than the few
// characters a number may gain.
import { Environment, Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { ValueSizes, type JsonStyle } from '../../../src/engine/model/text/template-value-size';
import { Rng } from '../../../src/engine/tensor/random';

/** A JS value as the library's runtime value (its classes are not exported; an Environment converts). */
function runtimeValue(value: unknown) {
  const env = new Environment();
  env.set('v', value);
  return env.lookupVariable('v');
}

const CHARS = ['a', 'Z', ' ', '"', '\\', '\n', '\t', '\u0001', 'é', '你', '😀', '/', '\u007f', '\ud800', '\udc00'];

/** A random value nested at most `depth` deep; `shared` holds lists that later values may reference again. */
function randomValue(rng: Rng, depth: number, shared: unknown[]): unknown {
  const kind = rng.int(depth > 0 ? 8 : 5);
  if (kind === 0) return Array.from({ length: rng.int(6) }, () => CHARS[rng.int(CHARS.length)]).join('');
  if (kind === 1) return rng.int(2) ? rng.int(100_000) - 50_000 : Math.round(rng.normal() * 1e6) / 1e3;
  if (kind === 2) return rng.int(2) === 1;
  if (kind === 3) return null;
  if (kind === 4 && shared.length) return shared[rng.int(shared.length)];
  if (kind === 5 || kind === 4) {
    const list = Array.from({ length: rng.int(5) }, () => randomValue(rng, depth - 1, shared));
    shared.push(list);
    return list;
  }
  return Object.fromEntries(
    Array.from({ length: rng.int(4) }, (_, i) => [`k${i}${CHARS[rng.int(CHARS.length)]}`, randomValue(rng, depth - 1, shared)]),
  );
}

/**
 * What the bound may add to the exact length: two characters per number, boolean or null (a
 * float may gain ".0") and one item separator per list or dict (counted after every item, the
 * last one included).
 */
function slack(value: unknown, itemSep: number): number {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return 2;
  if (typeof value === 'object') return Object.values(value).reduce<number>((n, v) => n + slack(v, itemSep), itemSep);
  return 0;
}

describe('ValueSizes', () => {
  const rng = new Rng(26);
  const values = Array.from({ length: 200 }, () => randomValue(rng, 4, []));

  it.each<[string, string, JsonStyle]>([
    ['tojson', '{{ v | tojson }}', { itemSep: 2, keySep: 2, indent: 0, ensureAscii: false }],
    ['tojson(indent=3)', '{{ v | tojson(indent=3) }}', { itemSep: 1, keySep: 2, indent: 3, ensureAscii: false }],
    [
      'tojson(separators, ensure_ascii)',
      '{{ v | tojson(separators=(",", ":"), ensure_ascii=true) }}',
      { itemSep: 1, keySep: 1, indent: 0, ensureAscii: true },
    ],
  ])('bounds %s from above, tightly without indent', (_, source, style) => {
    const template = new Template(source);
    for (const v of values) {
      const actual = template.render({ v }).length;
      const bound = new ValueSizes(style).json(runtimeValue(v));
      expect(bound, JSON.stringify(v)).toBeGreaterThanOrEqual(actual);
      // Indentation is bounded by the deepest level for every item; without it the bound is exact but for numbers.
      if (style.indent === 0) expect(bound - actual, JSON.stringify(v)).toBeLessThanOrEqual(slack(v, style.itemSep));
    }
  });

  it('bounds printing (a list or dict printed as the library prints it, a string as itself)', () => {
    const template = new Template('{{ v }}');
    for (const v of [...values, 'plain "text"', 42, 1.5]) {
      expect(new ValueSizes().printed(runtimeValue(v)), JSON.stringify(v)).toBeGreaterThanOrEqual(template.render({ v }).length);
    }
  });

  it('counts a list referenced many times at its full size, walking it once', () => {
    // As a template's `[r, r, ...]` builds it: lists holding the same list object (converting a JS
    // value instead would copy it 512 times).
    const ArrayValue = runtimeValue([]).constructor as new (items: unknown[]) => ReturnType<typeof runtimeValue>;
    const r = runtimeValue(Array.from({ length: 100_000 }, (_, i) => i));
    const eight = (item: ReturnType<typeof runtimeValue>) => new ArrayValue(Array(8).fill(item));
    const d = eight(eight(eight(r)));
    expect(new ValueSizes().json(d)).toBeGreaterThan(512 * new ValueSizes().json(r));
  });
});
