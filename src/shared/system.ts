import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { uuidv7 } from './uuidv7';
import type { Clock, Ids } from './ports';

export const CLOCK = Symbol('CLOCK');
export const IDS = Symbol('IDS');

export const systemClock: Clock = { now: () => Date.now() };
/** Time-ordered ids (UUIDv7): event ids are indexed, and ordered ids keep appends fast as the store grows. */
export const uuidIds: Ids = { newId: () => uuidv7() };

/**
 * Short, URL-safe run ids that sort in launch order: `run_`, then 24 hex digits of a UUIDv7 (its
 * 48-bit milliseconds, its 12-bit sequence and 36 of its random bits). Run ids key the run's stream,
 * checkpoint and lease in every store: keys that grow with time keep the pages the live runs write
 * together at the end of each index, where random keys would spread them over the whole of it.
 */
export function newRunId(): string {
  const hex = uuidv7().replace(/-/g, '');
  // Skipping the version digit (12) and the variant digit (16).
  return `run_${hex.slice(0, 12)}${hex.slice(13, 16)}${hex.slice(17, 26)}`;
}

export const PROCESS_ID = Symbol('PROCESS_ID');

/**
 * This process's identity as a writer and a driver: host, pid and a random part, so a restarted
 * process (same pid after a reboot, a container) is never taken for the one before it.
 */
export function newProcessId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
