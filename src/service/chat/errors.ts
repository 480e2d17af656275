/**
 * The chat service's own errors. A ChatRequestError is vLLM's 400 "BadRequestError": the request
 * is well-formed JSON of the right types but breaks a rule (a cross-field check, the context
 * length, an out-of-vocabulary token id, a field Hearth cannot honour). The API maps it, like
 * every HearthError, to vLLM's envelope in src/api/errors.ts.
 *
 * Not here: unknown models (NotFoundError, 404) and a missing engine (UnavailableError, 503),
 * which are the service-wide classes of ../errors.ts.
 */
import { HearthError } from '../errors';

export class ChatRequestError extends HearthError {
  override name = 'ChatRequestError';
  readonly status = 400;
  constructor(
    message: string,
    /** The request field at fault, when there is one (vLLM's newer `param`). */
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** Throws a ChatRequestError unless `ok`. */
export function ensure(ok: boolean, message: string, param: string | null = null): asserts ok {
  if (!ok) throw new ChatRequestError(message, param);
}
