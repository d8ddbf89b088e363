import type { ProcessLoad } from '../dispatch/placement';

/**
 * Run leases: which process may drive a run, until when. A lease is taken only when it is free or
 * expired, renewed by its owner's heartbeat, and released on a clean stop. The lease says who
 * should drive; the run stream's expected revision (DriverClaimed) fences a driver that lost it.
 */
export interface RunLeases {
  /** Takes the lease when free, expired, or already ours; true when we hold it now. */
  tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /**
   * Extends all of `owner`'s leases among `runIds` in one statement; returns the runs still held.
   * A run missing from the answer was taken by another owner (or released).
   */
  renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>>;
  release(runId: string, owner: string): Promise<void>;
  /** The current holder, if its lease has not expired. */
  holder(runId: string, nowMs: number): Promise<string | undefined>;
  /** Which of `runIds` a live lease covers (any owner's), in one statement: what recovery skips. */
  held(runIds: string[], nowMs: number): Promise<Set<string>>;
  /**
   * A serving process's advertisement: alive until `nowMs + ttlMs`, driving `active` runs out of
   * `cap`. Renewed by its heartbeat; what launchers read to place runs (see placement.ts).
   */
  advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void>;
  /**
   * The live processes' loads. A process's `active` is the larger of what it advertised and the
   * live leases it holds (on the SQL stores), so a run just handed to it counts at once.
   */
  loads(nowMs: number): Promise<ProcessLoad[]>;
  /** A process stopping: no longer offered runs. */
  withdraw(owner: string): Promise<void>;
  close(): Promise<void>;
}

export const RUN_LEASES = Symbol('RUN_LEASES');
