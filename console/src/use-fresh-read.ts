import { useEffect, useMemo, useState } from 'preact/hooks';
import { freshReads } from './fresh-reads';

/**
 * `load` read when the page opens, again whenever `changedBy` changes (a run's latest event), every
 * `everyMs` if given, and at refresh() (after the user acted): one read at a time, answers applied
 * in the order the reads began (freshReads), and a value given to setValue() (what an action
 * answered) never replaced by a read begun before it. `deps` name what `load` reads.
 */
export function useFreshRead<T>(load: () => Promise<T>, deps: unknown[], when: { everyMs?: number; changedBy?: unknown } = {}) {
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
  useEffect(() => reads.changed(), [reads, when.changedBy]);
  useEffect(() => {
    if (when.everyMs === undefined) return undefined;
    const timer = window.setInterval(() => reads.changed(), when.everyMs);
    return () => window.clearInterval(timer);
  }, [reads, when.everyMs]);
  return { value, setValue: (v: T) => reads.replace(v), error, refresh: () => reads.changed() };
}
