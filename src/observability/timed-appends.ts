import { withAppend } from '../events/append-proxy';
import type { EventStore, NewEvent } from '../events/event-store/event-store.port';

export interface AppendObserver {
  /** Each append's duration and whether it succeeded. */
  timed(store: string, seconds: number, ok: boolean): void;
  /** The events of each successful append. */
  appended?(streamId: string, events: readonly NewEvent[]): void;
}

/** The event store with each `append` observed (the append latency histogram, the event log lines). */
export function observedAppends(store: EventStore, observer: AppendObserver): EventStore {
  const append: EventStore['append'] = async (streamId, events, options) => {
    const started = process.hrtime.bigint();
    let ok = false;
    try {
      const result = await store.append(streamId, events, options);
      ok = true;
      return result;
    } finally {
      observer.timed(store.kind, Number(process.hrtime.bigint() - started) / 1e9, ok);
      if (ok) observer.appended?.(streamId, events);
    }
  };
  return withAppend(store, append);
}
