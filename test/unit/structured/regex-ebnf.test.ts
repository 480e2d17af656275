// Hearth's regex -> EBNF translation, matched by xgrammar's grammar engine against JavaScript's
// RegExp on random strings: raw mode (whitespace_pattern) matches the string itself; JSON-string
// mode (a schema's pattern) matches the JSON text of the string, escapes included. Always sound
// (nothing RegExp refuses); complete on ASCII strings and on the non-ASCII characters a set lists
// or covers whole (see charsExpr: a set covering part of the non-ASCII range keeps its ASCII part).
import { beforeAll, describe, expect, it } from 'vitest';
import { RegexSyntaxError, regexToEbnf, regexToJsonStringEbnf } from '../../../src/service/structured/regex-ebnf';
import { XGrammarRuntime, type XGrammarLib } from '../../../src/service/structured/xgrammar-runtime';
import { rng } from './decode-helpers';

let lib: XGrammarLib;
beforeAll(async () => {
  lib = (await XGrammarRuntime.load()).lib;
});

async function matcherOf(expr: string): Promise<(text: string) => Promise<boolean>> {
  const grammar = await lib.Grammar.fromEBNF(`root ::= ${expr}`);
  return (text) => lib.Testings.isGrammarAcceptString(grammar, text);
}

const ALPHABET = ['a', 'b', 'c', 'x', '0', '7', ' ', '\t', '\n', '\r', '"', '\\', '\u0001', '.', '-', 'é', '😀', '\u2028'];

/** Random strings over the alphabet, plus the strings a few seeds of the pattern suggest. */
function samples(seed: number, extra: string[]): string[] {
  const random = rng(seed);
  const out = new Set(extra);
  out.add('');
  for (let i = 0; i < 160; i++) {
    const n = Math.floor(random() * 6);
    let s = '';
    for (let k = 0; k < n; k++) s += ALPHABET[Math.floor(random() * ALPHABET.length)];
    out.add(s);
  }
  return [...out];
}

/** [pattern, strings that must be matched exactly as RegExp does (non-ASCII ones included)]. */
const patterns: [string, string[]][] = [
  ['[ \\t\\n]*', ['  ', '\t\n ']],
  ['( |\\n  )?', [' ', '\n  ', '\n ']],
  ['\\s{0,3}', [' \u2028', '\r\n', '\u3000\u00a0', '  ']],
  ['a+b?', ['aaa', 'ab', 'b']],
  ['(?:ab|c)*x', ['abcx', 'x', 'cabx']],
  ['[^a-c"]{1,2}', ['xx', '"', '\\', 'é😀', ' ', 'a']],
  ['.{2}', ['ab', '\n\n', '"\\']],
  ['\\d+\\.\\d', ['10.5', '.5']],
  ['\\w\\W', ['a ', 'a"', '_\\', 'aé', 'a😀']],
  ['[\\x00-\\x1f]', ['\u0001', '\t']],
  ['\\u00e9|😀|"', ['é', '😀', '"', 'e']],
  ['^a|b$', ['a', 'b']],
  ['[-.]\\\\', ['-\\', '.\\']],
  ['[à-ÿ]+', ['àé', 'ÿ', 'é😀', 'a']],
];

// oxlint-disable-next-line no-control-regex -- ASCII includes the control characters
const isAscii = (s: string) => /^[\x00-\x7f]*$/.test(s);

describe('raw mode (whitespace_pattern)', () => {
  it.each(patterns)('%s matches as RegExp does', async (pattern, extra) => {
    const accepts = await matcherOf(regexToEbnf(pattern));
    const re = new RegExp(`^(?:${pattern})$`, 'u');
    for (const s of samples(3, extra)) {
      const ok = await accepts(s);
      if (ok) expect(re.test(s), `${JSON.stringify(s)} accepted`).toBe(true);
      if (isAscii(s) || extra.includes(s)) expect(ok, JSON.stringify(s)).toBe(re.test(s));
    }
  });
});

describe('JSON-string mode (a schema pattern)', () => {
  it.each(patterns)('%s matches the JSON text of the strings RegExp matches', async (pattern, extra) => {
    const accepts = await matcherOf(regexToJsonStringEbnf(pattern));
    const re = new RegExp(`^(?:${pattern})$`, 'u');
    for (const s of samples(5, extra)) {
      const text = JSON.stringify(s).slice(1, -1);
      const ok = await accepts(text);
      if (ok) expect(re.test(s), `${JSON.stringify(s)} accepted as ${text}`).toBe(true);
      if (isAscii(s) || extra.includes(s)) expect(ok, `${JSON.stringify(s)} as ${text}`).toBe(re.test(s));
    }
    // Never a bare quote, backslash or control character.
    for (const bad of ['"', '\\', '\n', '\t', '\u0001']) expect(await accepts(bad), JSON.stringify(bad)).toBe(false);
  });
});

describe('sets covering part of the non-ASCII range keep their ASCII part', () => {
  it('`.` writes ASCII only (it excludes two non-ASCII line separators, and xgrammar cannot say that)', async () => {
    const accepts = await matcherOf(regexToEbnf('.'));
    expect(await accepts('a')).toBe(true);
    expect(await accepts('é')).toBe(false);
    expect(await accepts('\u2028')).toBe(false);
  });
});

describe('refused syntax', () => {
  it.each([
    ['(a)\\1', 'backreferences are not supported'],
    ['(?=a)b', 'lookaround and named groups are not supported'],
    ['a**', 'nothing to repeat'],
    ['[b-a]', 'range out of order'],
    ['(ab', 'unterminated group'],
    ['[ab', 'unterminated character class'],
    ['a{3,2}', 'the upper bound is below the lower'],
    ['a\\', 'the pattern ends with a backslash'],
    ['a^b', '"^" is only allowed at the start'],
    ['\\q', 'unknown escape'],
  ])('%s', (pattern, message) => {
    expect(() => regexToEbnf(pattern)).toThrow(RegexSyntaxError);
    expect(() => regexToEbnf(pattern)).toThrow(message);
  });
});
