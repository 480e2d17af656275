/**
 * ConstraintError: a structured-output constraint (or a tool choice that needs one) Hearth
 * refuses: malformed, contradictory, or something xgrammar cannot compile. It is a chat 400
 * (vLLM's BadRequestError) whose message names the problem and whose `param` names the field.
 *
 * Not here: the checks themselves (constraint-spec.ts, grammar-compiler.ts).
 */
import { ChatRequestError } from '../chat/errors';

export class ConstraintError extends ChatRequestError {
  override name = 'ConstraintError';
}

/** Throws a ConstraintError unless `ok`. */
export function ensureConstraint(ok: boolean, message: string, param: string): asserts ok {
  if (!ok) throw new ConstraintError(message, param);
}
