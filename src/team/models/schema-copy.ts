import { deepFreeze } from '../../shared/deep-freeze';

/**
 * A tool's input schema as the HTTP providers send it: a deep copy, so that a request never shares
 * the registry's objects, made once per schema object and frozen, so that every request may share
 * it. A structuredClone per tool per call was 75 µs of every model call on the production path.
 * A schema object is taken as settled once sent (the tool registry's are constants): a later change
 * to it is not sent.
 */
const copies = new WeakMap<object, Record<string, unknown>>();

export function schemaCopy(schema: Record<string, unknown>): Record<string, unknown> {
  let copy = copies.get(schema);
  if (!copy) {
    copy = deepFreeze(structuredClone(schema));
    copies.set(schema, copy);
  }
  return copy;
}
