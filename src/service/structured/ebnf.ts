/**
 * The EBNF text Hearth writes for xgrammar (its dialect: https://xgrammar.mlc.ai, "EBNF"):
 * - a `choice` constraint as one alternation of string literals (vLLM's choice_as_grammar, with
 *   every character a literal may not hold escaped, not only quotes and backslashes);
 * - a JSON grammar whose whitespace follows a `whitespace_pattern`: xgrammar writes JSON
 *   whitespace as `[ \n\t]*` everywhere (with any_whitespace), so each of those becomes the
 *   pattern, inline (see regex-ebnf.ts for why not a rule).
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

/** How xgrammar's JSON-schema converter writes "any JSON whitespace" (any_whitespace = true). */
export const JSON_WHITESPACE = '[ \\n\\t]*';

/**
 * A JSON grammar (from xgrammar's converter, with any whitespace) whose every whitespace run must
 * match `whitespace` (an inline EBNF expression, regex-ebnf.ts) instead.
 */
export function withWhitespace(jsonEbnf: string, whitespace: string): string {
  return jsonEbnf.split(JSON_WHITESPACE).join(`(${whitespace})`);
}
