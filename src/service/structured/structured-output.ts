/**
 * The structured-output step of a chat request, for the chat pipeline: read the request's
 * constraint (structured_outputs, response_format, a named or "required" tool_choice), compile it
 * for the served model (cached), and hand out one TokenConstraint per choice.
 *
 * Usage (src/service/chat): `const so = await prepareStructuredOutput(req, model)` before
 * planning (a ConstraintError is the request's 400); `generation.constraints =
 * choiceConstraints(so, n, { tokenizer, reasoning })`; `so.spec.output` says whether the output
 * is content or tool calls (chat/tool-calls-output-parser.ts parses the latter).
 *
 * Not here: the pieces (constraint-spec.ts, grammar-compiler.ts, grammar-matcher.ts).
 */
import type { TokenConstraint } from '../../engine/generate/types';
import type { ModelTokenizer } from '../../engine/model/text/tokenizer';
import { compileStructuredOutput, type CompiledConstraint, type StructuredModel } from './grammar-compiler';
import { structuredOutputSpec, type StructuredRequestFields } from './constraint-spec';

export type { StructuredRequestFields } from './constraint-spec';
export type { CompiledConstraint, StructuredModel } from './grammar-compiler';

/** The request's compiled constraint, or null when its output is free. Throws ConstraintError (400). */
export async function prepareStructuredOutput(req: StructuredRequestFields, model: StructuredModel): Promise<CompiledConstraint | null> {
  const spec = structuredOutputSpec(req);
  return spec ? compileStructuredOutput(spec, model) : null;
}

/**
 * One matcher per choice (null for all when there is no constraint). With `reasoning` (the
 * output starts in a <think> block), each grammar starts after the model's `</think>` token, as
 * vLLM applies structured outputs to the answer only; a tokenizer without a single `</think>`
 * token constrains from the first token. Every matcher offers jump-forward tokens.
 */
export function choiceConstraints(
  compiled: CompiledConstraint | null,
  n: number,
  options: { tokenizer: ModelTokenizer; reasoning: boolean },
): (TokenConstraint | null)[] {
  const endThink = options.reasoning ? options.tokenizer.tokenToId('</think>') : undefined;
  return Array.from({ length: n }, () => compiled?.createConstraint({ tokenizer: options.tokenizer, startAfterTokenId: endThink }) ?? null);
}
