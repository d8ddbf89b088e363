import { ConfigError } from '../config/config';
import { DomainError, type DomainErrorKind } from '../shared/errors';

/**
 * Exit codes: 0 success, 1 the run or command failed (or the store cannot be opened or reached),
 * 2 bad input or configuration, 3 not found, 4 conflict, 5 forbidden (self-review), 124 wait timed
 * out, 141 stdout was closed by its reader (as a process ended by SIGPIPE reports in a shell).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, notFound: 3, conflict: 4, forbidden: 5, timeout: 124, brokenPipe: 141 } as const;

/** Every expected failure of the domain, by kind, to its exit code. */
export const EXIT_OF_KIND: Readonly<Record<DomainErrorKind, number>> = {
  invalid: EXIT.usage,
  not_found: EXIT.notFound,
  conflict: EXIT.conflict,
  forbidden: EXIT.forbidden,
  unavailable: EXIT.failed,
};

/** An error the CLI itself raises with the exit code it means. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof ConfigError) return EXIT.usage;
  if (err instanceof DomainError) return EXIT_OF_KIND[err.kind];
  return EXIT.failed;
}
