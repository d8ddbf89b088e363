// Reads that follow a source which keeps changing (a run's summary while its events stream in).
//
// The usual effect clean-up drops the read in flight at each change. On a busy run events arrive
// faster than a read returns, so every read is dropped and the page keeps showing the state from
// before the burst began, until the run pauses. Here one read runs at a time and, if the source
// changed while it ran, one more starts after it: the last change is always followed by a read
// that began after it, at most one read is in flight, and no answer is applied after stop().

export interface FreshReads {
  /** The source changed: read it (now, or once the read in flight returns). */
  changed(): void;
  /** Nothing more is read or applied. */
  stop(): void;
}

export function freshReads<T>(load: () => Promise<T>, apply: (value: T) => void, fail: (error: unknown) => void): FreshReads {
  let inFlight = false;
  let again = false;
  let stopped = false;
  const read = (): void => {
    inFlight = true;
    again = false;
    load().then(
      (value) => {
        if (!stopped) apply(value);
      },
      (error: unknown) => {
        if (!stopped) fail(error);
      },
    ).finally(() => {
      inFlight = false;
      if (again && !stopped) read();
    });
  };
  return {
    changed() {
      if (stopped) return;
      if (inFlight) again = true;
      else read();
    },
    stop() {
      stopped = true;
    },
  };
}
