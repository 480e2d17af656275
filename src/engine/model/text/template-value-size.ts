/**
 * Upper bounds on what @huggingface/jinja builds in one step, computed before it builds it
 * (issue 26): `tojson`, printing `{{ value }}`, `~`, `+` with a string, and the `join`, `indent`
 * and `replace` filters each build their string in one step, and `s.split(sep)` its list, so a
 * check after the step comes too late. A value can hold the same list many times over
 * (`[r, r, r, ...]` nested three deep over `range(100000)` prints 51 M numbers), so sizes are
 * memoised per object: the walk costs one visit per distinct list or dict, however often it is
 * referenced.
 *
 * The forms bounded (the library's runtime, 0.5.11):
 * - JSON (`toJSON`): what `tojson` writes, and how a list or dict prints (`{{ d }}`, `d ~ ''`,
 *   `d|string`): strings quoted and escaped, `itemSep` between items, `keySep` after keys, and
 *   with `indent` a newline plus the depth's indentation before every item;
 * - printed: a string as itself, a number as its digits, a list or dict as JSON above.
 *
 * Not here: where the bounds are checked (template-budget.ts).
 * Reference: @huggingface/jinja src/runtime.ts toJSON.
 */
import type { Interpreter } from '@huggingface/jinja';

type RuntimeValue = ReturnType<Interpreter['evaluate']>;

/** The separators and options of one `tojson` (the library's defaults: ", " and ": ", no indent). */
export interface JsonStyle {
  itemSep: number;
  keySep: number;
  indent: number;
  ensureAscii: boolean;
}

export const DEFAULT_JSON_STYLE: JsonStyle = { itemSep: 2, keySep: 2, indent: 0, ensureAscii: false };

/** A value nested deeper than this counts as unbounded (the library's recursion would overflow first). */
const MAX_DEPTH = 512;

interface Size {
  /** Characters without indentation. */
  chars: number;
  /** Items and containers, each counted as often as it is printed: each gets one indentation. */
  nodes: number;
  /** The deepest nesting of containers below (0 for a scalar). */
  height: number;
}

/**
 * Characters JSON.stringify writes for `s`: quotes, `\"` `\\` and the short escapes of control
 * characters, \uXXXX for other control characters and lone surrogates, and with ensure_ascii
 * \uXXXX for every code unit past ASCII (the library's makeAsciiSafe).
 */
function jsonStringChars(s: string, ensureAscii: boolean): number {
  let n = s.length + 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) n += 1;
    else if (c < 0x20) n += 5;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      if (ensureAscii) n += 10;
    } else if (c >= 0xd800 && c <= 0xdfff) n += 5;
    else if (ensureAscii && c > 0x7e) n += 5;
  }
  return n;
}

/**
 * Upper bounds for the values of one check, memoised per list or dict (so `join` over eight
 * references to one list walks it once). Make one per check: lists can change between checks.
 */
export class ValueSizes {
  private readonly memo = new Map<unknown, Size>();

  constructor(private readonly style: JsonStyle = DEFAULT_JSON_STYLE) {}

  /** Upper bound on the characters of `toJSON(value, style)`. */
  json(value: RuntimeValue): number {
    const s = this.size(value, 0);
    return s.chars + (this.style.indent > 0 ? s.nodes * (1 + this.style.indent * (s.height + 1)) : 0);
  }

  /** Upper bound on the characters of `value` printed: `{{ value }}`, `value ~ ''`, an item of `join`. */
  printed(value: RuntimeValue): number {
    if (value.type === 'StringValue') return (value.value as string).length;
    // A dict's `.value` printed by `~` or `join` is "[object Map]": 12 characters, more than its JSON when empty.
    return value.value instanceof Map ? Math.max(12, this.json(value)) : this.json(value);
  }

  private size(v: RuntimeValue, depth: number): Size {
    if (v.type === 'StringValue') return { chars: jsonStringChars(v.value as string, this.style.ensureAscii), nodes: 1, height: 0 };
    const items = v.value;
    if (!(items instanceof Map) && !Array.isArray(items)) {
      // "null", "undefined" (printed, not as JSON), "false"; a number (a float may gain ".0").
      const chars = SCALAR_CHARS[v.type] ?? String(items).length + 2;
      return { chars, nodes: 1, height: 0 };
    }
    const found = this.memo.get(v);
    if (found) return found;
    if (depth > MAX_DEPTH) return UNBOUNDED;
    // A value that holds itself (a namespace attribute set to the namespace) prints without end.
    this.memo.set(v, UNBOUNDED);
    const out: Size = { chars: 2, nodes: 1, height: 1 };
    const add = (item: RuntimeValue, key: string | null) => {
      const s = this.size(item, depth + 1);
      out.chars += s.chars + this.style.itemSep + (key === null ? 0 : jsonStringChars(key, this.style.ensureAscii) + this.style.keySep);
      out.nodes += s.nodes;
      if (s.height + 1 > out.height) out.height = s.height + 1;
    };
    if (items instanceof Map) for (const [key, item] of items) add(item, key);
    else for (const item of items) add(item, null);
    this.memo.set(v, out);
    return out;
  }
}

const SCALAR_CHARS: Record<string, number> = { NullValue: 4, UndefinedValue: 9, BooleanValue: 5 };

const UNBOUNDED: Size = { chars: Infinity, nodes: 0, height: 0 };

/**
 * The characters `tojson`, `indent`, `replace` or `join` would produce from these operand and
 * arguments (an upper bound), or null for another filter or operand.
 */
export function filterResultChars(
  name: string,
  operand: RuntimeValue,
  args: RuntimeValue[],
  kwargs: Map<string, RuntimeValue>,
): number | null {
  const arg = (i: number, key: string) => args[i] ?? kwargs.get(key);
  const num = (v: RuntimeValue | undefined, fallback: number) => (typeof v?.value === 'number' ? v.value : fallback);
  const str = (v: RuntimeValue | undefined, fallback: string) => (typeof v?.value === 'string' ? v.value : fallback);
  if (name === 'tojson') {
    // The library's defaults, or the separators given (a pair of strings; anything else it refuses).
    const given = kwargs.get('separators')?.value;
    const [itemSep, keySep] = (Array.isArray(given) ? given : []).map((v: RuntimeValue) => str(v, '').length);
    return new ValueSizes({
      itemSep: itemSep ?? DEFAULT_JSON_STYLE.itemSep,
      keySep: keySep ?? DEFAULT_JSON_STYLE.keySep,
      indent: Math.max(0, num(kwargs.get('indent'), 0)),
      ensureAscii: kwargs.get('ensure_ascii')?.value === true,
    }).json(operand);
  }
  if (operand.type === 'StringValue') {
    const text = operand.value as string;
    if (name === 'indent') {
      const lines = text.split('\n').length;
      return text.length + lines * Math.max(0, num(arg(0, 'width'), 4));
    }
    if (name === 'replace') {
      const from = str(arg(0, 'old'), '');
      const to = str(arg(1, 'new'), '');
      const count = num(arg(2, 'count'), Infinity);
      const times = Math.min(count < 0 ? Infinity : count, from === '' ? text.length + 1 : Math.floor(text.length / from.length));
      return text.length + times * Math.max(0, to.length - from.length);
    }
    // Joining a string joins its characters.
    if (name === 'join') return text.length + Math.max(0, text.length - 1) * str(arg(0, 'separator'), '').length;
    return null;
  }
  if (name === 'join' && (operand.type === 'ArrayValue' || operand.type === 'TupleValue')) {
    const items = operand.value as RuntimeValue[];
    const sep = str(arg(0, 'separator'), '');
    let chars = Math.max(0, items.length - 1) * sep.length;
    const sizes = new ValueSizes();
    for (const item of items) chars += sizes.printed(item);
    return chars;
  }
  return null;
}

/**
 * The parts `text.split(sep, maxsplit)` would produce (as the library's method reads its
 * arguments), counted up to `max` + 1 without building them.
 */
export function splitParts(text: string, args: RuntimeValue[], max: number): number {
  const maxsplit = typeof args[1]?.value === 'number' ? args[1].value : -1;
  if (maxsplit >= 0 && maxsplit < max) return maxsplit + 1;
  const sep = args[0]?.type === 'StringValue' ? (args[0].value as string) : null;
  let parts = sep === null ? 0 : 1;
  if (sep === null) {
    for (const _word of text.matchAll(/\S+/g)) if (++parts > max) break;
  } else if (sep !== '') {
    for (let at = text.indexOf(sep); at >= 0 && parts <= max; at = text.indexOf(sep, at + sep.length)) parts++;
  }
  return parts;
}
