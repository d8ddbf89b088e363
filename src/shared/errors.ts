/**
 * Expected failures of the domain, by kind. Every module's own errors extend one of these, so the
 * shell maps a failure once, by its kind: `src/http/error.filter.ts` to an HTTP status and
 * `src/cli/exit-codes.ts` to an exit code. Nothing below a controller knows about HTTP.
 */
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'forbidden' | 'unavailable';

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
}

/** The request cannot be accepted as given (400; exit 2). */
export class InvalidRequestError extends DomainError {
  override name = 'InvalidRequestError';
  readonly kind = 'invalid';
}

/** What the request names does not exist (404; exit 3). */
export class NotFoundError extends DomainError {
  override name = 'NotFoundError';
  readonly kind = 'not_found';
}

/** The request conflicts with the current state: decided already, ended, changed meanwhile (409; exit 4). */
export class ConflictError extends DomainError {
  override name = 'ConflictError';
  readonly kind = 'conflict';
}

/** The actor may not do this (self-review, self-approval; 403; exit 5). */
export class ForbiddenError extends DomainError {
  override name = 'ForbiddenError';
  readonly kind = 'forbidden';
}

/** A dependency is not answering; the request may be tried again (503; exit 1). */
export class UnavailableError extends DomainError {
  override name = 'UnavailableError';
  readonly kind = 'unavailable';
}

export function isDomainError(err: unknown): err is DomainError {
  return err instanceof DomainError;
}
