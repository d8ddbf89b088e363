import { useEffect, useMemo, useState } from 'preact/hooks';
import { freshReads } from './fresh-reads';

/**
 * `load` read when the page opens, every `everyMs` while it stays open, and at refresh() (after
 * the user acted): one read at a time and answers applied in the order the reads began, so an
 * answer from before a decision never replaces one from after it.
 */
export function usePolled<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]) {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reads = useMemo(
    () =>
      freshReads(
        load,
        (v) => (setValue(v), setError(null)),
        (err) => setError(err),
      ),
    deps,
  );
  useEffect(() => {
    reads.changed();
    const timer = window.setInterval(() => reads.changed(), everyMs);
    return () => {
      window.clearInterval(timer);
      reads.stop();
    };
  }, [reads, everyMs]);
  return { value, setValue, error, refresh: () => reads.changed() };
}
