import { useEffect, useMemo, useState } from 'preact/hooks';
import { freshReads } from './fresh-reads';

/**
 * `load` read when the page opens, every `everyMs` while it stays open, and at refresh() (after
 * the user acted): one read at a time, answers applied in the order the reads began, and a value
 * given to setValue() (what an action answered) never replaced by a read begun before it.
 */
export function usePolled<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]) {
  const [value, setShown] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reads = useMemo(
    () =>
      freshReads<T>(
        load,
        (v) => (setShown(v), setError(null)),
        (err) => setError(err),
      ),
    deps,
  );
  useEffect(() => () => reads.stop(), [reads]);
  useEffect(() => {
    reads.changed();
    const timer = window.setInterval(() => reads.changed(), everyMs);
    return () => window.clearInterval(timer);
  }, [reads, everyMs]);
  return { value, setValue: (v: T) => reads.replace(v), error, refresh: () => reads.changed() };
}
