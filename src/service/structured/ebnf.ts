/**
 * The EBNF text Hearth writes for xgrammar (its dialect: https://xgrammar.mlc.ai, "EBNF"):
 * - a `choice` constraint as one alternation of string literals (vLLM's choice_as_grammar, with
 *   every character a literal may not hold escaped, not only quotes and backslashes);
 * - a JSON grammar whose whitespace follows a `whitespace_pattern`: xgrammar writes JSON
 *   whitespace as `[ \n\t]*` everywhere (with any_whitespace), so each of those becomes the
 *   pattern, inline (see regex-ebnf.ts for why not a rule);
 * - the JSON numbers of xgrammar's converter with a bounded number of digits.
 *
 * Not here: calling xgrammar (grammar-compiler.ts).
 */

/** A string as an EBNF string literal. */
export function ebnfString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += '\\x' + code.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + '"';
}

/** `root ::= "a" | "b"`: exactly one of the choices. */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfString).join(' | ')}`;
}

/**
 * Most digits of a JSON integer (and of a number's integer part): 16, the digits of 2^53 - 1.
 * RFC 8259 §6 calls integers beyond ±(2^53 - 1) not interoperable, and a small model at
 * temperature 1 otherwise writes digits until its length limit (issue 13).
 */
export const JSON_INTEGER_DIGITS = 16;
/** Most digits after a number's decimal point (a double holds 17 significant digits) and of its exponent (doubles end at e308). */
export const JSON_FRACTION_DIGITS = 16;
export const JSON_EXPONENT_DIGITS = 3;

/**
 * A JSON grammar from xgrammar's converter whose integers and numbers have at most the digits
 * above: its number rules (`[1-9] [0-9]*`, `("." [0-9]+)?`, `[eE] [+-]? [0-9]+`) get bounded
 * repeats. Only the converter's text: Hearth's range rules (numeric-ranges.ts) come later.
 */
export function withBoundedNumbers(jsonEbnf: string): string {
  return jsonEbnf
    .split('[1-9] [0-9]*')
    .join(`[1-9] [0-9]{0,${JSON_INTEGER_DIGITS - 1}}`)
    .split('("." [0-9]+)?')
    .join(`("." [0-9]{1,${JSON_FRACTION_DIGITS}})?`)
    .split('[eE] [+-]? [0-9]+')
    .join(`[eE] [+-]? [0-9]{1,${JSON_EXPONENT_DIGITS}}`);
}

/** How xgrammar's JSON-schema converter writes "any JSON whitespace" (any_whitespace = true). */
export const JSON_WHITESPACE = '[ \\n\\t]*';

/**
 * A JSON grammar (from xgrammar's converter, with any whitespace) whose every whitespace run must
 * match `whitespace` (an inline EBNF expression, regex-ebnf.ts) instead.
 */
export function withWhitespace(jsonEbnf: string, whitespace: string): string {
  return jsonEbnf.split(JSON_WHITESPACE).join(`(${whitespace})`);
}
