/**
 * The structured-output step of a chat request, for the chat pipeline: read the request's
 * constraint (structured_outputs, response_format, a named or "required" tool_choice), compile it
 * for the served model (cached), and hand out one TokenConstraint per choice.
 *
 * Usage (src/service/chat): `const so = await prepareStructuredOutput(req, model)` before
 * planning, a 400 if it throws ConstraintError; `generation.constraints = choices.map(() =>
 * so?.createConstraint({ tokenizer, startAfterTokenId }) ?? null)`; `so.spec.output` says whether
 * the output is content or tool calls (chat/tool-calls-forced.ts parses the latter).
 *
 * Not here: the pieces (constraint-spec.ts, grammar-compiler.ts, grammar-matcher.ts).
 */
import { compileStructuredOutput, type CompiledConstraint, type StructuredModel } from './grammar-compiler';
import { structuredOutputSpec, type StructuredRequestFields } from './constraint-spec';

export { STRUCTURED_OUTPUT_BACKEND } from './constraint-spec';
export type { ConstrainedOutput, Constraint, StructuredOutputSpec, StructuredRequestFields } from './constraint-spec';
export type { CompiledConstraint, StructuredModel } from './grammar-compiler';
export type { GrammarConstraint, GrammarConstraintOptions } from './grammar-matcher';
export { ConstraintError } from './errors';

/** The request's compiled constraint, or null when its output is free. Throws ConstraintError (400). */
export async function prepareStructuredOutput(req: StructuredRequestFields, model: StructuredModel): Promise<CompiledConstraint | null> {
  const spec = structuredOutputSpec(req);
  return spec ? compileStructuredOutput(spec, model) : null;
}
