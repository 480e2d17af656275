/**
 * The budget of a structured-output constraint, checked before xgrammar compiles it: the compile
 * runs in WASM on the engine thread and cannot be interrupted, and its cost grows with the
 * constructs a request may write at no cost to itself (issue 10, item 7): `((ab){0,1000}){0,1000}`
 * took 273 s on tiny-qwen3's vocabulary, a schema's `maxLength` of 1,000 about 5 s.
 *
 * Why caps on the constructs rather than a worker that is terminated on overrun: a compiled
 * grammar's matchers run on the engine thread for every decoded token, so the grammar must live in
 * the engine's own xgrammar instance; compiling in a worker would mean a second instance, a second
 * copy of the vocabulary's tokenizer info, and no way to move the compiled grammar across. The caps
 * bound exactly what makes the compile expensive (measured on tiny-qwen3's vocabulary in Node, 2026-11:
 * one `{0,100000}` 0.2 s, nested 100 x 100 0.1 s, nested 1000 x 1000 273 s):
 * - a repetition count ({n}, {n,m}) at most GRAMMAR_LIMITS.maxRepetition: one large count is
 *   cheap (xgrammar repeats a rule), but
 * - repetitions nested in one expression multiply, so their product is at most
 *   GRAMMAR_LIMITS.maxNestedRepetition (a rule referenced under a repetition is not inlined, so
 *   the product is taken within one expression);
 * - a JSON schema's minLength / maxLength at most GRAMMAR_LIMITS.maxStringLength, minItems /
 *   maxItems / minProperties / maxProperties at most GRAMMAR_LIMITS.maxItems;
 * - the text of a pattern, a grammar, a schema, a choice list or a structural tag at most
 *   GRAMMAR_LIMITS.maxSourceChars;
 * - and in total, not just per construct (issue 26: 24 strings of maxLength 10,000, each within
 *   its cap, gave no answer in 60 s while every other request waited): a grammar's JSON strings
 *   cost their length bound plus a fixed part each (Hearth writes each bounded string as a rule
 *   of its own; measured, 8 strings of maxLength 100 took twice as long as one of 1,000, so each
 *   costs about 200 more), and the repetition counts of a schema's patterns count with them; at
 *   most GRAMMAR_LIMITS.maxTotalStringLength. The repetition counts of a regex or grammar add up
 *   to at most GRAMMAR_LIMITS.maxTotalRepetition. Either total admits one construct at its own
 *   cap, so the dearest grammar costs about what the dearest single construct did.
 * Over a cap: a ConstraintError (400) naming the field, the construct and the limit.
 *
 * Not here: whether xgrammar accepts the constraint (grammar-compiler.ts).
 * Reference: https://github.com/mlc-ai/xgrammar (EBNF dialect: {n,m} repetition).
 */
import type { Constraint } from './constraint-spec';

/** README.md "Budgets for untrusted files and programs" lists these. */
export const GRAMMAR_LIMITS = {
  /** Characters of one regex, EBNF grammar, JSON schema, choice list or structural tag (as JSON). */
  maxSourceChars: 256 * 1024,
  /** The largest count in one `{n}` / `{n,m}` of a regex or grammar. */
  maxRepetition: 100_000,
  /** The product of the counts of repetitions nested inside each other. */
  maxNestedRepetition: 10_000,
  /** A JSON schema's minLength / maxLength. */
  maxStringLength: 10_000,
  /** A grammar's JSON strings: their length bounds plus STRING_RULE_COST each, and their patterns' counts. */
  maxTotalStringLength: 20_000,
  /** The counts of every repetition of one regex or grammar, added up. */
  maxTotalRepetition: 100_000,
  /** A JSON schema's minItems / maxItems / minProperties / maxProperties. */
  maxItems: 100_000,
};

/** What one bounded JSON string costs beyond its length bound (see the header). */
const STRING_RULE_COST = 200;

/** The running totals of one constraint. */
interface Tally {
  /** JSON strings: length bounds (plus STRING_RULE_COST each) and their patterns' counts. */
  strings: number;
  /** Repetition counts of regexes and grammars. */
  repetitions: number;
}

/** Why the constraint is over budget (naming the construct), or null. */
export function grammarOverBudget(c: Constraint, limits = GRAMMAR_LIMITS): string | null {
  const tally: Tally = { strings: 0, repetitions: 0 };
  return (
    constructOverBudget(c, tally, limits) ??
    totalOverBudget(c.kind === 'json' ? 'the JSON schema' : `the ${c.kind.replace('_', ' ')}`, tally, limits)
  );
}

function constructOverBudget(c: Constraint, tally: Tally, limits: typeof GRAMMAR_LIMITS): string | null {
  switch (c.kind) {
    case 'regex':
      return sourceOverBudget('the regex', c.pattern, false, limits, tally);
    case 'grammar':
      return sourceOverBudget('the grammar', c.ebnf, true, limits, tally);
    case 'choice':
      return tooLong('the choices', JSON.stringify(c.choices), limits);
    case 'json':
      return (
        tooLong('the JSON schema', JSON.stringify(c.schema) ?? '', limits) ??
        valueOverBudget(c.schema, '$', limits, tally) ??
        (c.whitespace.type === 'pattern' ? sourceOverBudget('whitespace_pattern', c.whitespace.pattern, false, limits, tally) : null)
      );
    case 'structural_tag':
      return tooLong('the structural tag', JSON.stringify(c.tag), limits) ?? valueOverBudget(c.tag, '$', limits, tally);
  }
}

function totalOverBudget(what: string, tally: Tally, limits: typeof GRAMMAR_LIMITS): string | null {
  if (tally.strings > limits.maxTotalStringLength) {
    return `${what}'s string length bounds (${STRING_RULE_COST} more for each bounded string) and pattern counts add up to ${tally.strings}, over Hearth's limit of ${limits.maxTotalStringLength} for one grammar`;
  }
  if (tally.repetitions > limits.maxTotalRepetition) {
    return `${what}'s repetition counts add up to ${tally.repetitions}, over Hearth's limit of ${limits.maxTotalRepetition} for one grammar`;
  }
  return null;
}

function tooLong(what: string, text: string, limits: typeof GRAMMAR_LIMITS): string | null {
  return text.length > limits.maxSourceChars
    ? `${what} is ${text.length} characters long, over Hearth's limit of ${limits.maxSourceChars}`
    : null;
}

const STRING_BOUNDS = ['minLength', 'maxLength'];
const COUNT_BOUNDS = ['minItems', 'maxItems', 'minProperties', 'maxProperties'];

/** Walks a schema (or a structural tag holding schemas, regexes and grammars) for constructs over budget. */
function valueOverBudget(value: unknown, path: string, limits: typeof GRAMMAR_LIMITS, tally: Tally, depth = 0): string | null {
  if (value === null || typeof value !== 'object' || depth > 256) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = valueOverBudget(value[i], `${path}[${i}]`, limits, tally, depth + 1);
      if (found) return found;
    }
    return null;
  }
  const bounds = STRING_BOUNDS.map((k) => (value as Record<string, unknown>)[k]).filter((v): v is number => typeof v === 'number');
  if (bounds.length > 0) tally.strings += Math.max(0, ...bounds) + STRING_RULE_COST;
  for (const [key, v] of Object.entries(value)) {
    const at = `${path}.${key}`;
    if (typeof v === 'number' && STRING_BOUNDS.includes(key) && v > limits.maxStringLength) {
      return `${key} ${v} at ${path} is over Hearth's limit of ${limits.maxStringLength}`;
    }
    if (typeof v === 'number' && COUNT_BOUNDS.includes(key) && v > limits.maxItems) {
      return `${key} ${v} at ${path} is over Hearth's limit of ${limits.maxItems}`;
    }
    // A schema's `pattern`, and a structural tag's regex and grammar formats.
    if (typeof v === 'string' && (key === 'pattern' || key === 'regex' || key === 'grammar')) {
      // A schema's pattern is a JSON string's (costed with the strings); a tag's regex and grammar are raw.
      const found = sourceOverBudget(`the ${key} at ${at}`, v, key === 'grammar', limits, tally, key === 'pattern');
      if (found) return found;
    }
    const found = valueOverBudget(v, at, limits, tally, depth + 1);
    if (found) return found;
  }
  return null;
}

/**
 * Checks the repetitions of a regex or an EBNF grammar (`ebnf`: "..." are literals). Each group
 * knows the largest product of counts inside it; a count applied to the group multiplies it.
 */
function sourceOverBudget(
  what: string,
  text: string,
  ebnf: boolean,
  limits: typeof GRAMMAR_LIMITS,
  tally: Tally,
  jsonString = false,
): string | null {
  const long = tooLong(what, text, limits);
  if (long) return long;
  const stack = [1];
  /** The largest product inside the atom a following count applies to (1 for a single item). */
  let atom = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      atom = 1;
    } else if (c === '[' || (ebnf && c === '"')) {
      i = literalEnd(text, i, c === '[' ? ']' : '"');
      atom = 1;
    } else if (c === '(') {
      stack.push(1);
    } else if (c === ')' && stack.length > 1) {
      atom = stack.pop()!;
      stack[stack.length - 1] = Math.max(stack[stack.length - 1], atom);
    } else if (c === '{') {
      const m = /^\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}/.exec(text.slice(i, i + 48));
      if (!m) continue;
      const count = Math.max(Number(m[1]), m[2] ? Number(m[2]) : 0);
      if (count > limits.maxRepetition)
        return `${what} repeats ${count} times at position ${i}, over Hearth's limit of ${limits.maxRepetition}`;
      const product = atom * Math.max(count, 1);
      if (atom > 1 && product > limits.maxNestedRepetition) {
        return `${what} nests repetitions whose counts multiply to ${product} at position ${i}, over Hearth's limit of ${limits.maxNestedRepetition}`;
      }
      stack[stack.length - 1] = Math.max(stack[stack.length - 1], product);
      // Counted as expanded: a repetition inside a repeated group counts as often as the group.
      if (jsonString) tally.strings += product;
      else tally.repetitions += product;
      i += m[0].length - 1;
      atom = 1;
    } else if (c !== '*' && c !== '+' && c !== '?' && c.trim() !== '') {
      atom = 1;
    }
  }
  return null;
}

/** The index of the unescaped `close` ending the literal or class opened at `open`. */
function literalEnd(text: string, open: number, close: string): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === close) return i;
  }
  return text.length - 1;
}
