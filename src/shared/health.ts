/**
 * What this process knows about its own health, reported by the parts that see it happen: the
 * store adapter (each query that failed to reach the store, each that answered), the projections
 * (progress, failures, restarts), the lease heartbeat. `GET /health` and `/metrics` read it, so a
 * health check costs no probe of every component.
 */

/** The process's HealthRegistry (a Nest provider of the global events module). */
export const HEALTH_REGISTRY = Symbol('HEALTH_REGISTRY');

/** What a store adapter reports: each failure to reach the store, and each answer. */
export interface StoreHealthSink {
  storeFailed(reason: string): void;
  storeAnswered(): void;
}

/** A projection is far behind when a store head it was shown this long ago is still not folded. */
export const FAR_BEHIND_MS = 30_000;

interface ProjectionHealth {
  position: number;
  failing?: string;
}

/** What /metrics reports of the registry (TriadMetrics makes prom-client series of them). */
export interface HealthFigures {
  /** Store operations that failed to reach the store. */
  storeErrors: number;
  /** Restarts after a failure, by component. */
  restarts: ReadonlyArray<readonly [component: string, count: number]>;
  /** Global position folded by each projection. */
  projectionPositions: ReadonlyArray<readonly [projection: string, position: number]>;
}

export interface HealthAssessment {
  ok: boolean;
  reasons: string[];
}

export class HealthRegistry implements StoreHealthSink {
  private storeFault?: string;
  private storeErrors = 0;
  private readonly projections = new Map<string, ProjectionHealth>();
  private readonly restarts = new Map<string, number>();
  private readonly failures = new Map<string, string>();
  /** Store heads seen by health checks, oldest first, kept until every projection has folded them. */
  private readonly heads: Array<{ head: number; at: number }> = [];

  constructor(
    private readonly now: () => number = Date.now,
    readonly farBehindMs = FAR_BEHIND_MS,
  ) {}

  storeFailed(reason: string): void {
    this.storeErrors++;
    this.storeFault = reason;
  }

  storeAnswered(): void {
    this.storeFault = undefined;
  }

  /** A projection folded up to `position` (and so is not failing). */
  projectionAt(name: string, position: number): void {
    const p = this.projections.get(name);
    if (p) {
      p.position = position;
      p.failing = undefined;
    } else this.projections.set(name, { position });
  }

  /** A projection stopped on an error and will restart. */
  projectionFailed(name: string, reason: string): void {
    const p = this.projections.get(name) ?? { position: 0 };
    p.failing = reason;
    this.projections.set(name, p);
    this.restarted(name);
  }

  /** A component (projection, driver, scanner) started again after a failure. */
  restarted(component: string): void {
    this.restarts.set(component, (this.restarts.get(component) ?? 0) + 1);
  }

  /** A component that must work for the process to be useful failed (cleared with `recovered`). */
  failed(component: string, reason: string): void {
    this.failures.set(component, reason);
  }

  recovered(component: string): void {
    this.failures.delete(component);
  }

  /** Healthy or not, and why; `head` (when the store answered) judges how far behind projections are. */
  assess(head?: number): HealthAssessment {
    const reasons: string[] = [];
    if (this.storeFault !== undefined) reasons.push('the event store is not reachable');
    for (const [name, reason] of this.failures) reasons.push(`${name}: ${reason}`);
    const at = this.now();
    if (head !== undefined && (this.heads.length === 0 || this.heads[this.heads.length - 1].head < head)) this.heads.push({ head, at });
    const slowest = Math.min(...[...this.projections.values()].map((p) => p.position));
    while (this.heads.length > 0 && this.heads[0].head <= slowest) this.heads.shift();
    if (this.heads.length > 64) this.heads.splice(0, this.heads.length - 64);
    for (const [name, p] of this.projections) {
      if (p.failing !== undefined) reasons.push(`projection ${name} is failing: ${p.failing}`);
      else if (this.heads.some((h) => h.head > p.position && at - h.at >= this.farBehindMs)) {
        reasons.push(`projection ${name} is far behind the store (at ${p.position})`);
      }
    }
    return { ok: reasons.length === 0, reasons };
  }

  /** The counts kept here, for /metrics. */
  figures(): HealthFigures {
    return {
      storeErrors: this.storeErrors,
      restarts: [...this.restarts],
      projectionPositions: [...this.projections].map(([name, p]) => [name, p.position] as const),
    };
  }
}
