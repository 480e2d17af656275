/**
 * The errors the service raises, each a named class carrying its HTTP status and a message that
 * says what to change. The API maps them to each route family's envelope in one place
 * (src/api/errors.ts); a 500 means a bug.
 *
 * Not here: request validation (zod in src/api), which never reaches the service with bad input.
 */

export abstract class HearthError extends Error {
  abstract readonly status: number;
}

/** The base of an error that is its name and its status, nothing more. */
function statusError(errorName: string, httpStatus: number) {
  return class extends HearthError {
    override name = errorName;
    readonly status = httpStatus;
  };
}

/** 400: the backend serving this engine cannot do what is asked (training without WebGPU); the message says why. */
export class NotSupportedError extends statusError('NotSupportedError', 400) {}

/** 401: missing, malformed or revoked API key. */
export class UnauthorizedError extends statusError('UnauthorizedError', 401) {}

/** 403: the key is valid but this endpoint needs the admin key. */
export class ForbiddenError extends statusError('ForbiddenError', 403) {}

/** 404: no such resource for this principal (another principal's resource looks the same). */
export class NotFoundError extends statusError('NotFoundError', 404) {}

/** 409: the request conflicts with what exists. */
export class ConflictError extends statusError('ConflictError', 409) {}

/** 429: the caller has too much in flight or queued; retry when some of it has finished. */
export class TooManyRequestsError extends statusError('TooManyRequestsError', 429) {}

/** Too many chat requests or batch rows in flight: worth retrying after `retryAfter` seconds. */
export class ConcurrencyLimitError extends TooManyRequestsError {
  readonly retryAfter = 1;
  constructor() {
    super('Concurrency limit reached for requests');
  }
}

/** 507: the browser's storage quota ran out; nothing of the request was kept. */
export class InsufficientStorageError extends statusError('InsufficientStorageError', 507) {}

/** 503: a part of Hearth that the request needs is not available (yet). */
export class UnavailableError extends statusError('UnavailableError', 503) {}

/**
 * 422: input that is well-formed but cannot be accepted, found by the service rather than the
 * schema (an unknown base model, an unresolvable data URL). Carries FastAPI-style detail items.
 */
export class InvalidInputError extends HearthError {
  override name = 'InvalidInputError';
  readonly status = 422;
  constructor(
    readonly loc: (string | number)[],
    message: string,
    readonly input: unknown,
    readonly type = 'value_error',
    readonly ctx: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
