/**
 * A regular expression as one inline EBNF expression (xgrammar's dialect), in two modes:
 * - raw, for `whitespace_pattern`: the pattern replaces every whitespace run of a JSON grammar in
 *   place. Inline and hand-translated because xgrammar prints a regex as several rules, and
 *   xgrammar 0.1.27 mis-matches a grammar where a rule that can be empty sits between the items
 *   of a list that also has an empty alternative: in the converter's grammar for an array of
 *   objects with its whitespace `[ \n\t]*` moved into a rule of its own (`ws ::= [ \n\t]*`),
 *   `[{"b":1}{"b":2}]` is accepted without its comma. The same expression inline is matched
 *   correctly. (No upstream issue found.)
 * - JSON string, for a schema's `pattern`: the expression matches the JSON text (between the
 *   quotes) of the strings the pattern matches: `"` and `\` and control characters are written
 *   as their escapes. xgrammar 0.1.27's own pattern grammar matches the raw text instead: for
 *   {type: string, pattern: ".*"} it accepts `"a"b"` and a raw newline between the quotes
 *   (invalid JSON). Related upstream: https://github.com/mlc-ai/xgrammar/issues/800 (a string with
 *   a pattern or a length loses JSON's escapes).
 * Canaries for both: test/unit/structured/xgrammar-canaries.test.ts.
 *
 * Supported: literals and escapes (\t \n \r \f \v \s \d \w \S... \xNN \uNNNN, escaped
 * punctuation), `.`, character classes (ranges, negation, escapes), groups `( )` and `(?: )`,
 * alternation, the quantifiers ? * + {n} {n,} {n,m} (lazy forms read as greedy: the language is
 * the same), and ^ / $ at the ends (a whitespace run is matched whole anyway). Anything else
 * (backreferences, lookaround) is a RegexSyntaxError.
 *
 * Not here: where the expression goes (ebnf.ts).
 */
import { ebnfString } from './ebnf';

export class RegexSyntaxError extends Error {
  override name = 'RegexSyntaxError';
}

/** One class member: a code point range [lo, hi]. */
type Range = [number, number];

const CLASS_ESCAPES: Record<string, Range[]> = {
  d: [[0x30, 0x39]],
  w: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a],
  ],
  // JavaScript's \s: ASCII whitespace, NBSP, and Unicode's space separators and line breaks.
  s: [
    [0x09, 0x0d],
    [0x20, 0x20],
    [0xa0, 0xa0],
    [0x1680, 0x1680],
    [0x2000, 0x200a],
    [0x2028, 0x2029],
    [0x202f, 0x202f],
    [0x205f, 0x205f],
    [0x3000, 0x3000],
    [0xfeff, 0xfeff],
  ],
};

const SINGLE_ESCAPES: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };

const MAX_CODE_POINT = 0x10ffff;

function complement(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of sorted) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

/** An ASCII code point as it may appear inside an EBNF class. */
function ebnfChar(cp: number): string {
  const ch = String.fromCodePoint(cp);
  if (cp === 9) return '\\t';
  if (cp === 10) return '\\n';
  if (cp === 13) return '\\r';
  if (cp < 0x20 || cp === 0x7f) return '\\x' + cp.toString(16).padStart(2, '0');
  if (ch === '\\' || ch === ']' || ch === '-' || ch === '^' || ch === '[') return '\\' + ch;
  return ch;
}

/** ranges minus remove. */
function subtract(ranges: Range[], remove: Range[]): Range[] {
  let out = ranges;
  for (const [rlo, rhi] of remove) {
    const next: Range[] = [];
    for (const [lo, hi] of out) {
      if (hi < rlo || lo > rhi) next.push([lo, hi]);
      else {
        if (lo < rlo) next.push([lo, rlo - 1]);
        if (hi > rhi) next.push([rhi + 1, hi]);
      }
    }
    out = next;
  }
  return out;
}

/** Characters a JSON string holds only as escapes: controls, the quote, the backslash. */
const JSON_ESCAPED: Range[] = [
  [0x00, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
];

/** JSON's two-character escapes, by the character they stand for. */
const SHORT_ESCAPES: Record<number, string> = { 0x08: 'b', 0x0c: 'f', 0x0a: 'n', 0x0d: 'r', 0x09: 't', 0x22: '"', 0x5c: '\\' };

/** The EBNF literal of a character's escape in JSON text (backslash-n, backslash-quote, \u0001). */
function jsonEscapeLiteral(cp: number): string {
  return ebnfString('\\' + (SHORT_ESCAPES[cp] ?? 'u' + cp.toString(16).padStart(4, '0')));
}

/** Non-ASCII code points (surrogates cannot occur in text). */
const WIDE: Range[] = [
  [0x80, 0xd7ff],
  [0xe000, MAX_CODE_POINT],
];
const ASCII: Range[] = [[0, 0x7f]];

function intersect(ranges: Range[], within: Range[]): Range[] {
  return subtract(ranges, subtract([[0, MAX_CODE_POINT]], within));
}

function size(ranges: Range[]): number {
  return ranges.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
}

/** Most non-ASCII characters a set may list one by one before it is cut to its ASCII part. */
const MAX_LISTED_WIDE = 256;

/**
 * An expression for one character of the ranges; in JSON-string mode the quote, the backslash and
 * control characters become their escapes.
 *
 * xgrammar 0.1.27 matches character classes reliably only for ASCII: a class with a range of
 * non-ASCII characters (or mixing them with ASCII ones) matches wrong characters, and a negated
 * class matches every non-ASCII character whatever it lists. So the ASCII part is a class, all of
 * the non-ASCII range is a negated class of ASCII characters, and a partial non-ASCII set is listed
 * character by character as literals, up to MAX_LISTED_WIDE of them; beyond that only the ASCII
 * part is kept (sound: fewer characters, never more).
 */
function charsExpr(ranges: Range[], jsonString: boolean): string {
  const escapes: string[] = [];
  let set = ranges;
  if (jsonString) {
    for (const [lo, hi] of intersect(ranges, JSON_ESCAPED)) for (let cp = lo; cp <= hi; cp++) escapes.push(jsonEscapeLiteral(cp));
    set = subtract(ranges, JSON_ESCAPED);
  }
  const ascii = intersect(set, ASCII);
  const wide = intersect(set, WIDE);
  const alts: string[] = [];
  if (subtract(WIDE, wide).length === 0) {
    const missing = subtract(ASCII, ascii);
    if (missing.length > 0) alts.push(`[^${classBody(missing)}]`);
    else alts.push(classText(ASCII), `[^${classBody(ASCII)}]`);
  } else {
    if (ascii.length > 0) alts.push(classText(ascii));
    if (size(wide) <= MAX_LISTED_WIDE) for (const [lo, hi] of wide) for (let cp = lo; cp <= hi; cp++) alts.push(wideLiteral(cp));
  }
  alts.push(...escapes);
  if (alts.length === 0)
    throw new RegexSyntaxError('a character set with nothing Hearth can write (only non-ASCII characters, too many to list)');
  return alts.length === 1 ? alts[0] : `(${alts.join(' | ')})`;
}

/** A non-ASCII character as an escaped EBNF string literal. */
function wideLiteral(cp: number): string {
  return cp > 0xffff ? `"\\U${cp.toString(16).padStart(8, '0')}"` : `"\\u${cp.toString(16).padStart(4, '0')}"`;
}

function classBody(ranges: Range[]): string {
  return ranges.map(([lo, hi]) => (lo === hi ? ebnfChar(lo) : `${ebnfChar(lo)}-${ebnfChar(hi)}`)).join('');
}

/** A class of ASCII ranges. */
function classText(ranges: Range[]): string {
  if (ranges.length === 0) throw new RegexSyntaxError('an empty character class matches nothing');
  return `[${classBody(ranges)}]`;
}

class Parser {
  private i = 0;
  constructor(
    private readonly src: string,
    private readonly jsonString: boolean,
  ) {}

  parse(): string {
    if (this.src.startsWith('^')) this.i = 1;
    const expr = this.alternation();
    if (this.i < this.src.length) throw new RegexSyntaxError(`unexpected "${this.src[this.i]}" at position ${this.i}`);
    return expr;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private alternation(): string {
    const branches = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      branches.push(this.sequence());
    }
    return branches.length === 1 ? branches[0] : `(${branches.map((b) => `(${b})`).join(' | ')})`;
  }

  private sequence(): string {
    const items: string[] = [];
    while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
      // `$` at the very end of the pattern (or of a branch) anchors: nothing to match.
      if (this.peek() === '$' && (this.i === this.src.length - 1 || this.src[this.i + 1] === '|' || this.src[this.i + 1] === ')')) {
        this.i++;
        continue;
      }
      items.push(this.quantified(this.atom()));
    }
    return items.length === 0 ? '""' : items.join(' ');
  }

  private quantified(atom: string): string {
    const c = this.peek();
    let out = atom;
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      out = `${atom}${c}`;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return atom;
      this.i += m[0].length;
      const lo = Number(m[1]);
      const hi = m[2] === undefined ? lo : m[3] === '' ? null : Number(m[3]);
      if (hi !== null && hi < lo) throw new RegexSyntaxError(`{${lo},${hi}}: the upper bound is below the lower`);
      out = m[2] === undefined ? `${atom}{${lo}}` : `${atom}{${lo},${hi ?? ''}}`;
    } else {
      return atom;
    }
    if (this.peek() === '?') this.i++; // lazy: same language
    if (this.peek() === '*' || this.peek() === '+' || this.peek() === '?' || this.peek() === '{') {
      // e.g. a** or possessive a*+: not JavaScript regex syntax.
      throw new RegexSyntaxError(`nothing to repeat at position ${this.i}`);
    }
    return out;
  }

  private atom(): string {
    const c = this.src[this.i++];
    switch (c) {
      case '(': {
        if (this.src.startsWith('?:', this.i)) this.i += 2;
        else if (this.peek() === '?') throw new RegexSyntaxError('lookaround and named groups are not supported');
        const inner = this.alternation();
        if (this.peek() !== ')') throw new RegexSyntaxError('unterminated group');
        this.i++;
        return `(${inner})`;
      }
      case '[':
        return charsExpr(this.classRanges(), this.jsonString);
      case '.':
        return charsExpr(
          complement([
            [10, 10],
            [13, 13],
            [0x2028, 0x2029],
          ]),
          this.jsonString,
        );
      case '\\': {
        const escaped = this.escape(false);
        return typeof escaped === 'number' ? this.literal(escaped) : charsExpr(escaped, this.jsonString);
      }
      case '*':
      case '+':
      case '?':
      case '{':
        throw new RegexSyntaxError(`nothing to repeat at position ${this.i - 1}`);
      case '^':
        throw new RegexSyntaxError('"^" is only allowed at the start');
      case '$':
        throw new RegexSyntaxError('"$" is only allowed at the end');
      default: {
        const cp = this.src.codePointAt(this.i - 1)!;
        if (cp > 0xffff) this.i++;
        return this.literal(cp);
      }
    }
  }

  private literal(cp: number): string {
    return charsExpr([[cp, cp]], this.jsonString);
  }

  /** After a backslash: one code point, or the ranges of a class escape. */
  private escape(inClass: boolean): number | Range[] {
    const c = this.src[this.i++];
    if (c === undefined) throw new RegexSyntaxError('the pattern ends with a backslash');
    if (c in SINGLE_ESCAPES) return SINGLE_ESCAPES[c];
    const lower = c.toLowerCase();
    if (lower in CLASS_ESCAPES) return c === lower ? CLASS_ESCAPES[lower] : complement(CLASS_ESCAPES[lower]);
    if (c === 'x' || c === 'u') {
      const m = (c === 'x' ? /^[0-9a-fA-F]{2}/ : /^[0-9a-fA-F]{4}/).exec(this.src.slice(this.i));
      if (!m) throw new RegexSyntaxError(`bad \\${c} escape at position ${this.i - 2}`);
      this.i += m[0].length;
      return parseInt(m[0], 16);
    }
    if (c === 'b' && inClass) return 8;
    if (/[0-9]/.test(c)) throw new RegexSyntaxError('backreferences are not supported');
    if (/[A-Za-z]/.test(c)) throw new RegexSyntaxError(`unknown escape \\${c}`);
    return c.codePointAt(0)!;
  }

  private classRanges(): Range[] {
    let negate = false;
    if (this.peek() === '^') {
      negate = true;
      this.i++;
    }
    const ranges: Range[] = [];
    while (this.i < this.src.length && this.peek() !== ']') {
      const lo = this.classAtom();
      if (this.peek() === '-' && this.src[this.i + 1] !== ']' && this.i + 1 < this.src.length && typeof lo === 'number') {
        this.i++;
        const hi = this.classAtom();
        if (typeof hi !== 'number') throw new RegexSyntaxError('a class escape cannot end a range');
        if (hi < lo) throw new RegexSyntaxError('range out of order in character class');
        ranges.push([lo, hi]);
      } else if (typeof lo === 'number') {
        ranges.push([lo, lo]);
      } else {
        ranges.push(...lo);
      }
    }
    if (this.peek() !== ']') throw new RegexSyntaxError('unterminated character class');
    this.i++;
    return negate ? complement(ranges) : ranges;
  }

  private classAtom(): number | Range[] {
    const c = this.src[this.i++];
    if (c === '\\') return this.escape(true);
    const cp = this.src.codePointAt(this.i - 1)!;
    if (cp > 0xffff) this.i++;
    return cp;
  }
}

/** The pattern as an inline EBNF expression matching the same strings (whole-string match). */
export function regexToEbnf(pattern: string): string {
  return new Parser(pattern, false).parse();
}

/** One character of a JSON string's text: a plain character or the escape of one. */
export function jsonStringCharEbnf(): string {
  return charsExpr([[0, MAX_CODE_POINT]], true);
}

/**
 * An inline EBNF expression for the JSON text (without the quotes) of the strings that match the
 * pattern as a whole; a schema pattern matches anywhere, so these strings all satisfy it.
 */
export function regexToJsonStringEbnf(pattern: string): string {
  return new Parser(pattern, true).parse();
}
