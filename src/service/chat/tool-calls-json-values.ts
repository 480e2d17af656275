/**
 * JSON values as vLLM's Python holds and re-dumps them, for tool calls: `loads` (json.loads into
 * values with dict semantics: a repeated key keeps its first place and its last value), `rawDecode`
 * (the first value of a text, as JSONDecoder.raw_decode), `dumps`
 * (json.dumps(value, ensure_ascii=False)), and CanonicalWriter, which writes the same text from
 * the reader's events piece by piece, so a streamed tool call's argument pieces join to exactly
 * the non-streamed `arguments` (for objects without repeated keys: Python's dict moves a repeated
 * key's value back to its first place, which a stream cannot take back).
 *
 * Not here: reading (tool-calls-json.ts).
 */
import { canonicalString, JsonEventReader, type JsonEvents } from './tool-calls-json';

type Container = { kind: 'object'; first: boolean } | { kind: 'array'; first: boolean };

/** Events -> json.dumps text, in pieces (each call of a handler returns what it adds). */
export class CanonicalWriter implements JsonEvents {
  private readonly stack: Container[] = [];
  private out = '';

  /** The text written since the last take(). */
  take(): string {
    const s = this.out;
    this.out = '';
    return s;
  }

  private beforeValue(): void {
    const top = this.stack[this.stack.length - 1];
    if (top?.kind === 'array') {
      if (!top.first) this.out += ', ';
      top.first = false;
    }
  }

  private open(kind: Container['kind'], bracket: string): void {
    this.beforeValue();
    this.out += bracket;
    this.stack.push({ kind, first: true });
  }

  private close(bracket: string): void {
    this.stack.pop();
    this.out += bracket;
  }

  startObject(): void {
    this.open('object', '{');
  }

  endObject(): void {
    this.close('}');
  }

  startArray(): void {
    this.open('array', '[');
  }

  endArray(): void {
    this.close(']');
  }

  key(name: string): void {
    const top = this.stack[this.stack.length - 1];
    if (!top.first) this.out += ', ';
    top.first = false;
    this.out += canonicalString(name) + ': ';
  }

  stringStart(): void {
    this.beforeValue();
    this.out += '"';
  }

  stringPiece(text: string): void {
    this.out += canonicalString(text).slice(1, -1);
  }

  stringEnd(): void {
    this.out += '"';
  }

  scalar(text: string): void {
    this.beforeValue();
    this.out += text;
  }
}

/** A parsed JSON value with Python's dict semantics; `text` is its json.dumps. */
export type PyValue =
  | { kind: 'object'; entries: Map<string, PyValue> }
  | { kind: 'array'; items: PyValue[] }
  | { kind: 'string'; value: string }
  | { kind: 'scalar'; text: string; value: number | boolean | null | bigint };

/** Events -> a PyValue: the reader's handler and the value read so far. */
function valueBuilder(): { events: JsonEvents; root: () => PyValue | null } {
  const stack: PyValue[] = [];
  const keys: (string | null)[] = [];
  let root: PyValue | null = null;
  let str = '';
  const add = (v: PyValue) => {
    const parent = stack[stack.length - 1];
    if (!parent) root = v;
    else if (parent.kind === 'array') parent.items.push(v);
    else if (parent.kind === 'object') parent.entries.set(keys[keys.length - 1]!, v);
  };
  const events: JsonEvents = {
    startObject: () => {
      const v: PyValue = { kind: 'object', entries: new Map() };
      add(v);
      stack.push(v);
      keys.push(null);
    },
    endObject: () => {
      stack.pop();
      keys.pop();
    },
    startArray: () => {
      const v: PyValue = { kind: 'array', items: [] };
      add(v);
      stack.push(v);
      keys.push(null);
    },
    endArray: () => {
      stack.pop();
      keys.pop();
    },
    key: (name) => {
      keys[keys.length - 1] = name;
    },
    stringStart: () => {
      str = '';
    },
    stringPiece: (t) => {
      str += t;
    },
    stringEnd: () => add({ kind: 'string', value: str }),
    scalar: (t, value) => add({ kind: 'scalar', text: t, value }),
  };
  return { events, root: () => root };
}

/** json.loads: the whole text must be one JSON value (whitespace around it allowed). */
export function loads(text: string): PyValue {
  const value = valueBuilder();
  const reader = new JsonEventReader(value.events);
  reader.push(text);
  reader.end();
  return value.root()!;
}

/**
 * json.JSONDecoder().raw_decode on text that starts with a value: the first JSON value, whatever
 * follows it ignored (vLLM's Mistral parser reads a call array this way). A container ends at its
 * closing bracket; a bare number or literal at the next character that cannot continue it.
 */
export function rawDecode(text: string): PyValue {
  const value = valueBuilder();
  const reader = new JsonEventReader(value.events);
  for (const ch of text) {
    if (reader.complete) break;
    reader.push(ch);
  }
  if (!reader.complete) reader.end();
  return value.root()!;
}

/** json.dumps(value, ensure_ascii=False). */
export function dumps(value: PyValue): string {
  switch (value.kind) {
    case 'object':
      return `{${[...value.entries].map(([k, v]) => `${canonicalString(k)}: ${dumps(v)}`).join(', ')}}`;
    case 'array':
      return `[${value.items.map(dumps).join(', ')}]`;
    case 'string':
      return canonicalString(value.value);
    case 'scalar':
      return value.text;
  }
}
