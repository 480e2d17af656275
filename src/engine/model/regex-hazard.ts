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
 * The rules (a conservative "star height one" subset, as the `safe-regex` family checks):
 * - no group that holds a quantifier or an alternation may itself be repeated (`*`, `+`, `{n,m}`
 *   with m > 1); `?` is allowed (it at most doubles the ways, once);
 * - at most REGEX_LIMITS.maxUnboundedPerBranch unbounded quantifiers in one alternative, so the
 *   polynomial stays of low degree (published patterns such as Llama 3's and o200k's use two);
 * - no counted repetition above REGEX_LIMITS.maxCount, no backreferences, and a length cap.
 * Every published tokenizer pattern Hearth knows passes (see the unit tests).
 *
 * Not here: compiling the pattern (the tokenizer library, lora-adapter.ts).
 * Reference: https://www.regular-expressions.info/catastrophic.html; V8's irregexp backtracks.
 */

export const REGEX_LIMITS = {
  /** Characters of one pattern. */
  maxLength: 1024,
  /** Unbounded quantifiers (`*`, `+`, `{n,}`) in one alternative. */
  maxUnboundedPerBranch: 2,
  /** The largest count in `{n}`, `{n,m}`. */
  maxCount: 1000,
};

interface Frame {
  /** The group holds a quantifier (at any depth). */
  quantified: boolean;
  /** The group holds an alternation (at any depth). */
  alternated: boolean;
  /** Unbounded quantifiers in the current alternative, and the most in any finished one. */
  branchUnbounded: number;
  maxUnbounded: number;
}

const frame = (): Frame => ({ quantified: false, alternated: false, branchUnbounded: 0, maxUnbounded: 0 });

/** Why `pattern` may backtrack catastrophically (or is too long), or null when it is safe to run. */
export function regexHazard(pattern: string, limits = REGEX_LIMITS): string | null {
  if (pattern.length > limits.maxLength) return `the pattern is ${pattern.length} characters long, over the limit of ${limits.maxLength}`;
  const stack: Frame[] = [frame()];
  /** The atom a following quantifier applies to: a closed group (with its contents), or a single item. */
  let atom: Frame | 'single' | null = null;
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
      const parent = stack[stack.length - 1];
      parent.quantified ||= closed.quantified;
      parent.alternated ||= closed.alternated;
      parent.branchUnbounded += Math.max(closed.maxUnbounded, closed.branchUnbounded);
      atom = closed;
    } else if (c === '|') {
      top.alternated = true;
      top.maxUnbounded = Math.max(top.maxUnbounded, top.branchUnbounded);
      top.branchUnbounded = 0;
      atom = null;
    } else if (c === '*' || c === '+' || c === '?' || (c === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i)))) {
      let max = c === '?' ? 1 : Infinity;
      if (c === '{') {
        const [, lo, comma, hi] = /^\{(\d+)(,)?(\d*)\}/.exec(pattern.slice(i))!;
        max = comma ? (hi === '' ? Infinity : Number(hi)) : Number(lo);
        if (Number(lo) > limits.maxCount || (max !== Infinity && max > limits.maxCount)) {
          return `the repetition count at position ${i} is over the limit of ${limits.maxCount}`;
        }
        i = pattern.indexOf('}', i);
      }
      if (atom === null) continue; // a lazy or possessive marker, or a literal at the start
      if (typeof atom === 'object' && max > 1 && (atom.quantified || atom.alternated)) {
        return `a repeated group holds a ${atom.quantified ? 'quantifier' : 'alternation'} (position ${i}): matching can take exponential time`;
      }
      top.quantified = true;
      if (max === Infinity && ++top.branchUnbounded > limits.maxUnboundedPerBranch) {
        return `more than ${limits.maxUnboundedPerBranch} unbounded quantifiers in one alternative (position ${i})`;
      }
      atom = null;
    } else {
      atom = 'single';
    }
  }
  if (stack.length > 1) return 'unbalanced "("';
  return null;
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
