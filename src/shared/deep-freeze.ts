/**
 * Freezes a JSON-shaped value all the way down and returns it. A part frozen already is taken as
 * frozen all the way (what this function froze), so a value shared by many readers (an event's
 * decoded metadata, the tool registry's specs, a tool schema as sent) costs one walk. The shared
 * tail's own deepFreeze walks every part, frozen or not: what it freezes may hold parts frozen by
 * someone else, shallowly.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
