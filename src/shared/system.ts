import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
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

export const PROCESS_ID = Symbol('PROCESS_ID');

/**
 * This process's identity as a writer and a driver: host, pid and a random part, so a restarted
 * process (same pid after a reboot, a container) is never taken for the one before it.
 */
export function newProcessId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
