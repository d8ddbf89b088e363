/**
 * Time and ids as the domain sees them: inputs to its decisions, never read from the system inside
 * it. The shell provides them (`systemClock` and `uuidIds` in system.ts); tests give fixed ones.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface Ids {
  /** A new unique id (event ids, decision ids). */
  newId(): string;
}
