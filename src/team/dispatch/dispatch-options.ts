export const RETRY_POLICY = Symbol('RETRY_POLICY');
export const DISPATCH_OPTIONS = Symbol('DISPATCH_OPTIONS');

export interface DispatchOptions {
  /** How long a lease lasts without renewal. */
  leaseTtlMs: number;
  checkpointEveryTurns: number;
  /** Runs this process drives at most at once (`TRIAD_MAX_ACTIVE_RUNS`); more wait, queued. */
  maxActiveRuns: number;
}

/** What the dispatch parts log through (Nest's Logger in the app; framework-free so unit tests build them). */
export interface DispatchLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}
