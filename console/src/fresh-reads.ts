// Reads that follow a source which keeps changing (a run's summary while its events stream in, a
// list polled every few seconds).
//
// The usual effect clean-up drops the read in flight at each change. On a busy run events arrive
// faster than a read returns, so every read is dropped and the page keeps showing the state from
// before the burst began, until the run pauses. Here one read runs at a time and, if the source
// changed while it ran, one more starts after it: the last change is always followed by a read
// that began after it, at most one read is in flight, and no answer is applied after stop(). A read
// must settle (the console's reads time out), or nothing more is read.

export interface FreshReads<T> {
  /** The source changed: read it (now, or once the read in flight returns). */
  changed(): void;
  /**
   * A value known to be newer than any read in flight (what an action answered): shown now, the
   * answer of a read begun before it dropped, and the source read once more after it.
   */
  replace(value: T): void;
  /** Nothing more is read or applied. */
  stop(): void;
}

export function freshReads<T>(load: () => Promise<T>, apply: (value: T) => void, fail: (error: unknown) => void): FreshReads<T> {
  let inFlight = false;
  let again = false;
  let stopped = false;
  /** Bumped by replace(): a read begun under an older epoch says nothing new. */
  let epoch = 0;
  const settle = (f: () => void) => {
    try {
      f();
    } catch (error) {
      // A page that cannot show an answer says so rather than stopping its reads.
      fail(error);
    }
  };
  const read = (): void => {
    inFlight = true;
    again = false;
    const began = epoch;
    new Promise<T>((resolve) => resolve(load()))
      .then(
        (value) => {
          if (!stopped && began === epoch) settle(() => apply(value));
        },
        (error: unknown) => {
          if (!stopped && began === epoch) fail(error);
        },
      )
      .catch(() => undefined)
      .finally(() => {
        inFlight = false;
        if (again && !stopped) read();
      });
  };
  const changed = (): void => {
    if (stopped) return;
    if (inFlight) again = true;
    else read();
  };
  return {
    changed,
    replace(value) {
      if (stopped) return;
      epoch += 1;
      settle(() => apply(value));
      changed();
    },
    stop() {
      stopped = true;
    },
  };
}
