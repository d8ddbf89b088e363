import type { EventStore } from './event-store/event-store.port';

/**
 * The event store with its `append` replaced (timed, signed, …); every other member is the
 * store's own, bound to it once. A proxy rather than a wrapper class, so the port can grow without
 * the wrappers changing.
 */
export function withAppend(store: EventStore, append: EventStore['append']): EventStore {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'append') return append;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (!bound.has(prop)) bound.set(prop, (value as (...args: unknown[]) => unknown).bind(target));
      return bound.get(prop);
    },
  });
}
