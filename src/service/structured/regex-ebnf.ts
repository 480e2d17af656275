/**
 * A regular expression as one inline EBNF expression (xgrammar's dialect), for
 * `whitespace_pattern`: the pattern replaces every whitespace run of a JSON grammar in place.
 *
 * Why inline and hand-translated: xgrammar prints a regex as several rules, and xgrammar 0.1.27
 * mis-matches a grammar where a rule that can be empty sits between the items of a list that also
 * has an empty alternative (`[{"b":1}{"b":2}]` was accepted without its comma in Hearth's tests);
 * the same expression written inline is matched correctly.
 *
 * Supported: literals and escapes (\t \n \r \f \v \s \d \w \S... \xNN \uNNNN, escaped
 * punctuation), `.`, character classes (ranges, negation, escapes), groups `( )` and `(?: )`,
 * alternation, the quantifiers ? * + {n} {n,} {n,m} (lazy forms read as greedy: the language is
 * the same), and ^ / $ at the ends (a whitespace run is matched whole anyway). Anything else
 * (backreferences, lookaround) is a RegexSyntaxError.
 *
 * Not here: where the expression goes (ebnf.ts).
 */

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

/** A code point as it may appear inside an EBNF class or string literal. */
function ebnfChar(cp: number, inClass: boolean): string {
  const ch = String.fromCodePoint(cp);
  if (cp === 9) return '\\t';
  if (cp === 10) return '\\n';
  if (cp === 13) return '\\r';
  if (cp < 0x20 || cp === 0x7f) return '\\x' + cp.toString(16).padStart(2, '0');
  if (cp > 0xffff) return '\\U' + cp.toString(16).padStart(8, '0');
  if (ch === '\\' || (inClass ? ch === ']' || ch === '-' || ch === '^' || ch === '[' : ch === '"')) return '\\' + ch;
  return ch;
}

function classText(ranges: Range[]): string {
  if (ranges.length === 0) throw new RegexSyntaxError('an empty character class matches nothing');
  return '[' + ranges.map(([lo, hi]) => (lo === hi ? ebnfChar(lo, true) : `${ebnfChar(lo, true)}-${ebnfChar(hi, true)}`)).join('') + ']';
}

class Parser {
  private i = 0;
  constructor(private readonly src: string) {}

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
      out = `${atom}{${lo}${m[2] === undefined ? '' : ','}${hi ?? ''}}`;
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
        return classText(this.classRanges());
      case '.':
        return classText(complement([[10, 10], [13, 13], [0x2028, 0x2029]]));
      case '\\': {
        const escaped = this.escape(false);
        return typeof escaped === 'number' ? `"${ebnfChar(escaped, false)}"` : classText(escaped);
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
        return `"${ebnfChar(cp, false)}"`;
      }
    }
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
  return new Parser(pattern).parse();
}
