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

/** 401: missing, malformed or revoked API key. */
export class UnauthorizedError extends HearthError {
  override name = 'UnauthorizedError';
  readonly status = 401;
}

/** 403: the key is valid but this endpoint needs the admin key. */
export class ForbiddenError extends HearthError {
  override name = 'ForbiddenError';
  readonly status = 403;
}

/** 404: no such resource for this principal (another principal's resource looks the same). */
export class NotFoundError extends HearthError {
  override name = 'NotFoundError';
  readonly status = 404;
}

/** 409: the request conflicts with what exists. */
export class ConflictError extends HearthError {
  override name = 'ConflictError';
  readonly status = 409;
}

/** 429: the caller has too much in flight or queued; retry when some of it has finished. */
export class TooManyRequestsError extends HearthError {
  override name = 'TooManyRequestsError';
  readonly status = 429;
}

/** 507: the browser's storage quota ran out; nothing of the request was kept. */
export class InsufficientStorageError extends HearthError {
  override name = 'InsufficientStorageError';
  readonly status = 507;
}

/** 503: a part of Hearth that the request needs is not available (yet). */
export class UnavailableError extends HearthError {
  override name = 'UnavailableError';
  readonly status = 503;
}

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
