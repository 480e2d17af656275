/**
 * JSON as vLLM's Python reads and writes it, for tool calls: `json.loads` (strict strings,
 * NaN / Infinity / -Infinity accepted, a repeated key keeps its first place and its last value)
 * and `json.dumps(value, ensure_ascii=False)` (", " and ": ", floats as Python's repr, integers
 * of any size as written, non-ASCII kept). A tool call's `arguments` string is that re-dump.
 *
 * This file is the reader: JsonEventReader takes text in pieces and reports events as soon as
 * they are certain (a string's characters as they arrive, a number once it ends), and fails at the
 * first character no JSON text can continue with; and the canonical forms of numbers and strings.
 *
 * Not here: values and the writer (tool-calls-json-values.ts), tool-call tags and deltas
 * (tool-calls-hermes.ts, tool-calls-forced.ts).
 * Reference: CPython Lib/json/decoder.py (py_scanstring, NUMBER_RE), Lib/json/encoder.py.
 */
import { pyFloat } from './py-format';

export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError';
}

/** What the reader reports; keys arrive whole, value strings in pieces. */
export interface JsonEvents {
  startObject(): void;
  endObject(): void;
  startArray(): void;
  endArray(): void;
  key(name: string): void;
  stringStart(): void;
  /** Decoded characters of the current value string (a surrogate pair is never split). */
  stringPiece(text: string): void;
  stringEnd(): void;
  /** A number, true, false, null, NaN, Infinity or -Infinity: its canonical text and value. */
  scalar(text: string, value: number | boolean | null | bigint): void;
}

const WHITESPACE = ' \t\n\r';
const SIMPLE_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const LITERALS: Record<string, number | boolean | null> = {
  true: true,
  false: false,
  null: null,
  NaN: NaN,
  Infinity: Infinity,
  '-Infinity': -Infinity,
};
const NUMBER = /^-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;

/** Python's text for a JSON number: the integer as written (without -0), or repr(float). */
export function canonicalNumber(text: string): { text: string; value: number | bigint } {
  const m = NUMBER.exec(text);
  if (!m) throw new JsonSyntaxError(`bad number ${JSON.stringify(text)}`);
  if (m[1] === undefined && m[2] === undefined) {
    const value = BigInt(text);
    return { text: value.toString(), value };
  }
  const value = Number(text);
  if (!Number.isFinite(value)) return { text: value > 0 ? 'Infinity' : '-Infinity', value };
  return { text: pyFloat(value), value };
}

/** json.dumps of a string with ensure_ascii=False (a lone surrogate is escaped: it has no UTF-8). */
export function canonicalString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20) out += '\\u' + c.toString(16).padStart(4, '0');
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) out += s[i] + s[++i];
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}

type Frame =
  | { kind: 'object'; expect: 'keyOrEnd' | 'key' | 'colon' | 'value' | 'commaOrEnd' }
  | { kind: 'array'; expect: 'valueOrEnd' | 'value' | 'commaOrEnd' };

/** The scalar being read: a string (key or value), or a number / literal (its characters so far). */
type Token = { kind: 'string'; isKey: boolean; text: string; escape: string | null; pendingHigh: string } | { kind: 'bare'; text: string };

/** An incremental json.loads: feed text with push(), then end(); events go to `on`. */
export class JsonEventReader {
  private readonly stack: Frame[] = [];
  private token: Token | null = null;
  private done = false;
  private failed = false;

  constructor(private readonly on: JsonEvents) {}

  /** A whole value has been read (only whitespace may follow). */
  get complete(): boolean {
    return this.done;
  }

  push(text: string): void {
    if (this.failed) throw new JsonSyntaxError('the reader already failed');
    try {
      for (const ch of text) this.char(ch);
      this.flushStringPiece();
    } catch (e) {
      this.failed = true;
      throw e;
    }
  }

  /** The input ended: a number in progress ends; anything open is an error. */
  end(): void {
    if (this.failed) throw new JsonSyntaxError('the reader already failed');
    if (this.token?.kind === 'bare') this.endBare();
    if (!this.done) {
      this.failed = true;
      throw new JsonSyntaxError('Expecting value: the JSON text ends early');
    }
  }

  private fail(message: string): never {
    throw new JsonSyntaxError(message);
  }

  private char(ch: string): void {
    const t = this.token;
    if (t?.kind === 'string') return this.stringChar(t, ch);
    if (t?.kind === 'bare') {
      if (/[0-9A-Za-z.+-]/.test(ch)) {
        t.text += ch;
        if (t.text.length > 400) this.fail('a number or literal longer than 400 characters');
        return;
      }
      this.endBare();
    }
    if (WHITESPACE.includes(ch)) return;
    if (this.done) this.fail(`Extra data: ${JSON.stringify(ch)}`);
    const frame = this.stack[this.stack.length - 1];
    if (frame?.kind === 'object') {
      if (frame.expect === 'colon') {
        if (ch !== ':') this.fail("Expecting ':' delimiter");
        frame.expect = 'value';
        return;
      }
      if (frame.expect === 'commaOrEnd') {
        if (ch === ',') frame.expect = 'key';
        else if (ch === '}') this.close('object');
        else this.fail("Expecting ',' delimiter");
        return;
      }
      if (frame.expect === 'keyOrEnd' || frame.expect === 'key') {
        if (ch === '}' && frame.expect === 'keyOrEnd') return this.close('object');
        if (ch !== '"') this.fail('Expecting property name enclosed in double quotes');
        this.token = { kind: 'string', isKey: true, text: '', escape: null, pendingHigh: '' };
        return;
      }
    } else if (frame?.kind === 'array') {
      if (frame.expect === 'commaOrEnd') {
        if (ch === ',') frame.expect = 'value';
        else if (ch === ']') this.close('array');
        else this.fail("Expecting ',' delimiter");
        return;
      }
      if (ch === ']' && frame.expect === 'valueOrEnd') return this.close('array');
    }
    this.startValue(ch);
  }

  private startValue(ch: string): void {
    if (ch === '{') {
      this.stack.push({ kind: 'object', expect: 'keyOrEnd' });
      this.on.startObject();
    } else if (ch === '[') {
      this.stack.push({ kind: 'array', expect: 'valueOrEnd' });
      this.on.startArray();
    } else if (ch === '"') {
      this.token = { kind: 'string', isKey: false, text: '', escape: null, pendingHigh: '' };
      this.on.stringStart();
    } else if (/[-0-9NIntf]/.test(ch)) {
      this.token = { kind: 'bare', text: ch };
    } else {
      this.fail(`Expecting value: ${JSON.stringify(ch)}`);
    }
  }

  /** A value ended: the enclosing frame moves on, or the text is complete. */
  private valueDone(): void {
    const frame = this.stack[this.stack.length - 1];
    if (!frame) this.done = true;
    else frame.expect = 'commaOrEnd';
  }

  private close(kind: 'object' | 'array'): void {
    this.stack.pop();
    if (kind === 'object') this.on.endObject();
    else this.on.endArray();
    this.valueDone();
  }

  private endBare(): void {
    const text = (this.token as { text: string }).text;
    this.token = null;
    if (text in LITERALS) this.on.scalar(text, LITERALS[text]);
    else if (!/^-?[0-9]/.test(text)) this.fail(`Expecting value: ${JSON.stringify(text)}`);
    else {
      const n = canonicalNumber(text);
      this.on.scalar(n.text, n.value);
    }
    this.valueDone();
  }

  private stringChar(t: Extract<Token, { kind: 'string' }>, ch: string): void {
    if (t.escape !== null) {
      if (t.escape === '') {
        if (ch === 'u') {
          t.escape = 'u';
          return;
        }
        const simple = SIMPLE_ESCAPES[ch];
        if (simple === undefined) this.fail(`Invalid \\escape: ${JSON.stringify(ch)}`);
        t.escape = null;
        return this.append(t, simple);
      }
      if (!/[0-9a-fA-F]/.test(ch)) this.fail('Invalid \\uXXXX escape');
      t.escape += ch;
      if (t.escape.length < 5) return;
      const unit = String.fromCharCode(parseInt(t.escape.slice(1), 16));
      t.escape = null;
      return this.append(t, unit);
    }
    if (ch === '\\') {
      t.escape = '';
      return;
    }
    if (ch === '"') {
      if (t.pendingHigh) this.appendNow(t, t.pendingHigh);
      t.pendingHigh = '';
      this.token = null;
      if (t.isKey) {
        this.on.key(t.text);
        (this.stack[this.stack.length - 1] as { expect: string }).expect = 'colon';
      } else {
        this.flush(t);
        this.on.stringEnd();
        this.valueDone();
      }
      return;
    }
    if (ch.length === 1 && ch.charCodeAt(0) < 0x20) this.fail('Invalid control character in a string');
    this.append(t, ch);
  }

  /** Adds decoded text; a high surrogate waits for the low one that may follow (as \\uXXXX). */
  private append(t: Extract<Token, { kind: 'string' }>, s: string): void {
    if (t.pendingHigh) {
      const high = t.pendingHigh;
      t.pendingHigh = '';
      if (s.length === 1 && (s.charCodeAt(0) & 0xfc00) === 0xdc00) return this.appendNow(t, high + s);
      this.appendNow(t, high);
    }
    if (s.length === 1 && (s.charCodeAt(0) & 0xfc00) === 0xd800) {
      t.pendingHigh = s;
      return;
    }
    this.appendNow(t, s);
  }

  private appendNow(t: Extract<Token, { kind: 'string' }>, s: string): void {
    t.text += s;
  }

  /** Hands a value string's decoded characters so far to stringPiece. */
  private flush(t: Extract<Token, { kind: 'string' }>): void {
    if (!t.isKey && t.text) {
      this.on.stringPiece(t.text);
      t.text = '';
    }
  }

  private flushStringPiece(): void {
    if (this.token?.kind === 'string') this.flush(this.token);
  }
}
