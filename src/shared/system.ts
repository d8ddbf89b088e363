import { randomUUID } from 'node:crypto';
import { uuidv7 } from './uuidv7';
import type { Clock, Ids } from './ports';

export const CLOCK = Symbol('CLOCK');
export const IDS = Symbol('IDS');

export const systemClock: Clock = { now: () => Date.now() };
/** Time-ordered ids (UUIDv7): event ids are indexed, and ordered ids keep appends fast as the store grows. */
export const uuidIds: Ids = { newId: () => uuidv7() };

/** Short, URL-safe run ids. */
export function newRunId(): string {
  return `run_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
}
