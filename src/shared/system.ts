import { randomUUID } from 'node:crypto';
import { uuidv7 } from './uuidv7';
import type { Clock, IdGenerator } from '../team/run-driver';

export const CLOCK = Symbol('CLOCK');
export const ID_GENERATOR = Symbol('ID_GENERATOR');

export const systemClock: Clock = { now: () => Date.now() };
/** Time-ordered ids (UUIDv7): event ids are indexed, and ordered ids keep appends fast as the store grows. */
export const uuidGenerator: IdGenerator = { newId: () => uuidv7() };

/** Short, URL-safe run ids. */
export function newRunId(): string {
  return `run_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
}
