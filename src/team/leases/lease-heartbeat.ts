import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { RunLeases } from './run-leases.port';

/**
 * The heartbeat renews every TTL/4: a lease then survives a heartbeat delayed by up to 3/4 of the
 * TTL (event-loop lag, a slow renewal, a store fault in between) before anyone may take it.
 */
export const HEARTBEATS_PER_TTL = 4;

/** What /metrics reports of the heartbeat (TriadMetrics makes prom-client series of them). */
export interface HeartbeatFigures {
  /** Lease heartbeats that renewed this process's leases. */
  renewals: number;
  /** Lease heartbeats the store did not answer. */
  renewalFailures: number;
  /** Leases found taken by another process (its driver here stopped). */
  leasesLost: number;
  /** Longest delay of a lease heartbeat past its planned time. */
  heartbeatDelayMaxSeconds: number;
  /** Longest event-loop delay seen since drivers started (undefined before). */
  eventLoopDelayMaxSeconds?: number;
}

export interface LeaseHeartbeatOptions {
  leases: RunLeases;
  owner: string;
  ttlMs: number;
  now: () => number;
  /** A run whose lease another owner took: its local driver must stop. */
  onLost: (runId: string) => void;
  logger?: { log(message: string): void; warn(message: string): void };
}

/**
 * Keeps this process's leases: one renewal statement for all of them per heartbeat, however many
 * runs and however busy their drivers. A lease is reported lost only when the renewal answers that
 * another owner holds it — never because a renewal failed (the store did not answer): nobody else
 * can take a lease before it expires, and a driver that was fenced meanwhile stops at its next
 * append (DriverClaimed at the expected revision).
 */
export class LeaseHeartbeat {
  private readonly held = new Set<string>();
  private timer?: NodeJS.Timeout;
  private loopDelay?: IntervalHistogram;
  private failing = false;
  private stopped = false;
  private readonly counters = { renewals: 0, renewalFailures: 0, leasesLost: 0, maxDelayMs: 0 };

  constructor(private readonly options: LeaseHeartbeatOptions) {}

  /** A lease this process took: renewed from now on, and the heartbeat started if it was not. */
  add(runId: string): void {
    this.held.add(runId);
    this.start();
  }

  /** A lease released (or about to be): no longer renewed. */
  delete(runId: string): void {
    this.held.delete(runId);
  }

  /**
   * The run's driver here found another process's claim in the run's events (after an outage or a
   * freeze longer than the TTL, before any renewal noticed): the lease was lost all the same.
   */
  fenced(runId: string): void {
    if (!this.held.delete(runId)) return;
    this.counters.leasesLost++;
    this.options.logger?.warn(`run ${runId}: another process drives the run now; the local driver stopped`);
  }

  private start(): void {
    if (this.timer || this.stopped) return;
    this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
    this.loopDelay.enable();
    const every = Math.max(25, Math.floor(this.options.ttlMs / HEARTBEATS_PER_TTL));
    let planned = Date.now() + every;
    // A chain of timeouts, not an interval: a renewal slower than the period never overlaps the next.
    const beat = async () => {
      const late = Date.now() - planned;
      this.counters.maxDelayMs = Math.max(this.counters.maxDelayMs, late);
      if (late > this.options.ttlMs / 2) this.options.logger?.warn(`lease heartbeat ran ${late} ms late (event loop busy or process paused)`);
      await this.renew();
      if (this.stopped) return;
      planned = Date.now() + every;
      this.timer = setTimeout(() => void beat(), every);
      this.timer.unref();
    };
    this.timer = setTimeout(() => void beat(), every);
    this.timer.unref();
  }

  /** Renews every lease held, in one statement; reports the ones another owner took. */
  async renew(): Promise<void> {
    const runIds = [...this.held];
    if (runIds.length === 0) return;
    let renewed: Set<string>;
    try {
      renewed = await this.options.leases.renewAll(runIds, this.options.owner, this.options.ttlMs, this.options.now());
      this.counters.renewals++;
      if (this.failing) this.options.logger?.log('lease renewals succeed again');
      this.failing = false;
    } catch (err) {
      this.counters.renewalFailures++;
      if (!this.failing) this.options.logger?.warn(`lease renewal failed (drivers go on): ${(err as Error).message}`);
      this.failing = true;
      return;
    }
    for (const runId of runIds) {
      // Released meanwhile (its driver ended): not a loss.
      if (renewed.has(runId) || !this.held.has(runId)) continue;
      this.counters.leasesLost++;
      this.held.delete(runId);
      this.options.logger?.warn(`run ${runId}: lease taken by another process; stopping the local driver`);
      this.options.onLost(runId);
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.loopDelay?.disable();
  }

  /** Renewals, failures, leases lost, heartbeat and event-loop delays (to the millisecond), for /metrics. */
  figures(): HeartbeatFigures {
    const c = this.counters;
    return {
      renewals: c.renewals,
      renewalFailures: c.renewalFailures,
      leasesLost: c.leasesLost,
      heartbeatDelayMaxSeconds: Math.round(Math.max(0, c.maxDelayMs)) / 1000,
      ...(this.loopDelay ? { eventLoopDelayMaxSeconds: Math.round(this.loopDelay.max / 1e6) / 1000 } : {}),
    };
  }
}
