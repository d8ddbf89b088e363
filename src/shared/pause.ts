/** Resolves after `ms`, or at once when `signal` aborts (never rejects: the caller checks the signal). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Waits for `work` to settle, for `ms` at most (never rejects): a shutdown step that must not hang on a silent peer. */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  const stop = new AbortController();
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  await Promise.race([settled, pause(ms, stop.signal)]);
  stop.abort();
}

/** A wait that doubles with each attempt (0-based): `firstMs`, 2 × `firstMs`, 4 × … at most `maxMs`. */
export function doublingDelayMs(attempt: number, firstMs: number, maxMs: number): number {
  return Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(0, attempt), 30));
}
