/**
 * Which regular expressions from files Hearth will run: a pattern from a downloaded repository
 * (tokenizer.json's Split/Replace patterns) or an imported adapter (adapter_config.json's
 * `target_modules`) runs on the engine thread in V8's backtracking engine, where `(a|a)*b` or
 * `(a+)+b` takes exponential time on a short non-matching input (issue 10, item 2). Such patterns
 * are refused when the file is read, with the reason; what remains matches in polynomial time.
 *
 * Why a check at load and not a cap on input length: the tokenizer runs its pre-tokenizer pattern
 * over whole prompt segments, and cutting them would change the tokens (a cut can fall inside a
 * word); a pattern is read once, so refusing the hazardous constructs costs nothing per prompt.
 * The rules (a conservative "star height one" subset, as the `safe-regex` family checks, with
 * a cost model on top):
 * - no group that holds a quantifier or an alternation may itself be repeated (`*`, `+`, `{n,m}`
 *   with m > 1); `?` is allowed (it at most doubles the ways, once);
 * - a quantifier is "long" when it is unbounded (`*`, `+`, `{n,}`) or its count range m - n is
 *   over REGEX_LIMITS.maxShortRange: on inputs shorter than its count, `.{0,999}` backtracks
 *   exactly as `.*` does (issue 26: `.{0,999}` twelve times, then `x`, never answered). At most
 *   REGEX_LIMITS.maxLongPerBranch long quantifiers in one alternative, so the polynomial in the
 *   input length stays of low degree (published patterns such as Llama 3's and o200k's use two);
 * - the other choices multiply: a short quantifier's range (`?`: 2, `{1,3}`: 3), an alternation's
 *   alternatives (summed), along one alternative. Their product over the pattern is at most
 *   REGEX_LIMITS.maxWays, so `(a|b)(a|b)(a|b)...` and `a?a?a?...` are refused too;
 * - no counted repetition above REGEX_LIMITS.maxCount, no backreferences, and a length cap.
 * Lookarounds are counted as groups: V8 runs them atomically, so counting their choices as
 * multiplying is an over-estimate, never an under-estimate.
 * Every published tokenizer pattern Hearth knows passes (see the unit tests). The check reads
 * the pattern that runs: for tokenizer.json that is the library's rewrite of the file's pattern
 * (tokenizer.ts), whose `\b` and `\w` expand to lookarounds and classes.
 *
 * Not here: compiling the pattern (the tokenizer library, service/adapters/parse.ts).
 * Reference: https://www.regular-expressions.info/catastrophic.html; V8's irregexp backtracks.
 */

export const REGEX_LIMITS = {
  /** Characters of one pattern. */
  maxLength: 1024,
  /** Long quantifiers (unbounded, or a count range over maxShortRange) in one alternative. */
  maxLongPerBranch: 2,
  /** The count range m - n of `{n,m}` above which the quantifier is long. */
  maxShortRange: 16,
  /** The product of the short choices (short quantifiers' ranges, alternations' alternatives). */
  maxWays: 256,
  /** The largest count in `{n}`, `{n,m}`. */
  maxCount: 1000,
};

/** The backtracking cost of a piece of pattern: `ways` x n^`degree` paths on an input of length n. */
interface Cost {
  ways: number;
  degree: number;
}

interface Frame extends Cost {
  /** The group holds a quantifier (at any depth). */
  quantified: boolean;
  /** The group holds an alternation (at any depth). */
  alternated: boolean;
  /** The alternatives finished so far: ways summed, the largest degree. */
  done: Cost;
}

const frame = (): Frame => ({ quantified: false, alternated: false, ways: 1, degree: 0, done: { ways: 0, degree: 0 } });

/** An atom a following quantifier applies to: a closed group (with its contents and cost), or a single item. */
type Atom = (Frame & { cost: Cost }) | 'single';

/** Why `pattern` may backtrack catastrophically (or is too long), or null when it is safe to run. */
export function regexHazard(pattern: string, limits = REGEX_LIMITS): string | null {
  if (pattern.length > limits.maxLength) return `the pattern is ${pattern.length} characters long, over the limit of ${limits.maxLength}`;
  const stack: Frame[] = [frame()];
  let atom: Atom | null = null;
  const tooMany = (top: Frame, i: number) =>
    top.degree > limits.maxLongPerBranch
      ? `more than ${limits.maxLongPerBranch} unbounded or long (over ${limits.maxShortRange} repeats) quantifiers in one alternative (position ${i}): matching can take time of a high power of the input length`
      : top.ways > limits.maxWays
        ? `the choices of one alternative multiply to more than ${limits.maxWays} ways (position ${i}): matching can take exponential time`
        : null;
  for (let i = 0; i < pattern.length; i++) {
    const top = stack[stack.length - 1];
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (/[1-9]/.test(next) || (next === 'k' && pattern[i + 2] === '<')) return 'backreferences are not allowed';
      i++;
      // \p{..}, \u{..}, \x{..}: the braces belong to the escape, not a quantifier.
      if (/[pPux]/.test(next) && pattern[i + 1] === '{') i = closing(pattern, i + 1, '}');
      atom = 'single';
    } else if (c === '[') {
      i = classEnd(pattern, i);
      atom = 'single';
    } else if (c === '(') {
      stack.push(frame());
      atom = null;
    } else if (c === ')') {
      if (stack.length === 1) return `unbalanced ")" at position ${i}`;
      const closed = stack.pop()!;
      const cost = alternatives(closed);
      const parent = stack[stack.length - 1];
      parent.quantified ||= closed.quantified;
      parent.alternated ||= closed.alternated;
      parent.ways *= cost.ways;
      parent.degree += cost.degree;
      atom = { ...closed, cost };
      const found = tooMany(parent, i);
      if (found) return found;
    } else if (c === '|') {
      top.alternated = true;
      top.done = alternatives(top);
      top.ways = 1;
      top.degree = 0;
      atom = null;
    } else if (c === '*' || c === '+' || c === '?' || (c === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i, i + 24)))) {
      let [min, max] = c === '?' ? [0, 1] : c === '*' ? [0, Infinity] : [1, Infinity];
      if (c === '{') {
        const [, lo, comma, hi] = /^\{(\d+)(,)?(\d*)\}/.exec(pattern.slice(i, i + 24))!;
        [min, max] = [Number(lo), comma ? (hi === '' ? Infinity : Number(hi)) : Number(lo)];
        if (min > limits.maxCount || (max !== Infinity && max > limits.maxCount)) {
          return `the repetition count at position ${i} is over the limit of ${limits.maxCount}`;
        }
        i = pattern.indexOf('}', i);
      }
      if (atom === null) continue; // a lazy or possessive marker, or a literal at the start
      if (typeof atom === 'object' && max > 1 && (atom.quantified || atom.alternated)) {
        return `a repeated group holds a ${atom.quantified ? 'quantifier' : 'alternation'} (position ${i}): matching can take exponential time`;
      }
      top.quantified = true;
      // The atom's own cost was counted when it closed: replace it with the repeated atom's.
      const once = typeof atom === 'object' ? atom.cost : { ways: 1, degree: 0 };
      top.ways /= once.ways;
      top.degree -= once.degree;
      if (max - min > limits.maxShortRange) top.degree += once.degree + 1;
      else {
        // min to max copies; only `?` (or `{1}`) can apply to a group with choices inside.
        top.ways *= max === 1 ? (min === 0 ? 1 : 0) + once.ways : max - min + 1;
        top.degree += once.degree;
      }
      const found = tooMany(top, i);
      if (found) return found;
      atom = null;
    } else {
      atom = 'single';
    }
  }
  if (stack.length > 1) return 'unbalanced "("';
  const total = alternatives(stack[0]);
  if (total.ways > limits.maxWays) {
    return `the alternatives' choices add up to more than ${limits.maxWays} ways: matching can take exponential time`;
  }
  return null;
}

/** The cost of a group so far: its finished alternatives and the current one. */
function alternatives(f: Frame): Cost {
  return { ways: f.done.ways + f.ways, degree: Math.max(f.done.degree, f.degree) };
}

/** The index of the `close` ending what starts at `open`, or the last index. */
function closing(pattern: string, open: number, close: string): number {
  const at = pattern.indexOf(close, open);
  return at < 0 ? pattern.length - 1 : at;
}

/** The index of the `]` closing the class that starts at `open` (nested classes counted, escapes skipped). */
function classEnd(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '[') depth++;
    else if (c === ']' && i > open + 1 && !(i === open + 2 && pattern[open + 1] === '^')) {
      if (--depth === 0) return i;
    }
  }
  return pattern.length - 1;
}
