import { UnavailableError } from '../../shared/errors';
import type { EventFilter, EventStore, RecordedEvent, Subscription } from '../../events/event-store/event-store.port';
import { isStoreUnavailable } from '../../events/errors';
import { followAcrossFaults } from '../../events/outlast-store';
import { recordFrom } from './chain';
import { APPROVAL_DECISION_EVENT_TYPE, DECISION_EVENT_TYPES, type DecisionRecord } from './decision-record';
import { DecisionLogHeadMovedError, type DecisionRecordRepository } from './decision-record.repository';

/**
 * The durable subscription name under which the projector's position is saved. Renamed when tool
 * approvals joined the log: the old name's position could be past approval decisions never
 * recorded, so an upgraded projector resumes after the last record instead.
 */
export const DECISION_LOG_SUBSCRIPTION = 'decision-log-v2';

/** Review decisions and tool-approval decisions. */
export const DECISION_EVENTS: EventFilter = { types: [...DECISION_EVENT_TYPES] };

/** Whether a decision event has a record: tool approvals only after the log started recording them. */
export function isRecorded(event: Pick<RecordedEvent, 'type' | 'position'>, approvalsFrom: number): boolean {
  return event.type !== APPROVAL_DECISION_EVENT_TYPE || event.position > approvalsFrom;
}

export interface ProjectionLogger {
  log(message: string): void;
  error(message: string): void;
}

export interface DecisionLogProjectionOptions {
  /** Events fetched per subscription page (default 500). */
  batchSize?: number;
  /** Save the checkpoint after this many records (default 500) … */
  checkpointEvery?: number;
  /** … or once the subscription has been idle this long (default 250 ms). */
  checkpointIdleMs?: number;
  /** First pause before the subscription is restarted after an error (default 200 ms); it doubles, with jitter, up to 5 s. */
  retryDelayMs?: number;
  logger?: ProjectionLogger;
  /** Told when the projector fails (it restarts by itself) and when it projects again (`GET /health`). */
  health?: ProjectionHealthSink;
}

export interface ProjectionHealthSink {
  failed(component: string, reason: string): void;
  recovered(component: string): void;
  restarted(component: string): void;
}

const COMPONENT = 'decision log projection';

/** The projector has not reached the store's head in time (it is failing, or far behind). */
export class DecisionLogBehindError extends UnavailableError {
  override readonly name = 'DecisionLogBehindError';
}

const IDLE = Symbol('idle');

/**
 * Keeps the decision log: a catch-up subscription to the store's ReviewDecided and
 * ToolApprovalDecided events (durable checkpoint `decision-log-v2`) that appends one record per decision, in global order, each chained
 * to the record before it. Framework-free; the Nest provider only starts and stops it.
 *
 * Several processes may project the same database at once: the repository appends only at the
 * head and is idempotent by decision id, so for each event exactly one record lands. A projector
 * whose append finds the decision stored skips it; one that finds the head moved re-reads the
 * head and builds the record again. Records are always a prefix of the decision events in global
 * order, which is also why resuming after the last record's position is exact; the named
 * checkpoint (saved every few hundred records and when idle) can only be further on.
 */
export class DecisionLogProjection {
  private current = 0;
  private head: DecisionRecord | null | undefined;
  private approvalsFrom?: number;
  private subscription?: Subscription;
  private loop?: Promise<void>;
  private stopped = false;
  private lastError?: Error;
  private savedPosition = 0;
  private sinceSave = 0;
  private readonly waiters = new Set<() => void>();
  private readonly stopping = new AbortController();
  private failures = 0;
  /** Between a failure and the restarted subscription's start. */
  private failing = false;

  constructor(
    private readonly store: EventStore,
    private readonly repo: DecisionRecordRepository,
    private readonly options: DecisionLogProjectionOptions = {},
  ) {}

  /** Position of the last decision event projected. */
  get position(): number {
    return this.current;
  }

  get running(): boolean {
    return this.loop !== undefined && !this.stopped;
  }

  /**
   * How far behind the store the log is, for /metrics: the decision events not yet projected
   * (counted up to 1,000), the age of the oldest, whether the projector is failing and how often it
   * failed.
   */
  async lag(now = Date.now()): Promise<{ events: number; seconds: number; failing: boolean; failures: number }> {
    const pending = await this.store.readAll({ after: this.current, maxCount: 1000, filter: DECISION_EVENTS });
    const oldest = pending.length > 0 ? Date.parse(pending[0].recordedAt) : NaN;
    return {
      events: pending.length,
      seconds: Number.isFinite(oldest) ? Math.max(0, (now - oldest) / 1000) : 0,
      failing: this.failing,
      failures: this.failures,
    };
  }

  start(): void {
    if (this.loop || this.stopped) return;
    this.loop = this.run();
  }

  /** Stops after the record in progress and saves the checkpoint. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.subscription?.close();
    this.stopping.abort();
    await this.loop;
    // A checkpoint not saved at stop only makes the next start resume from the log's last record (see consume).
    await this.saveCheckpoint().catch(() => undefined);
    this.notify();
  }

  /**
   * Resolves, once every decision event committed before the call is in the log, with the store
   * position up to which that holds (the head read at the call).
   */
  async catchUp(timeoutMs = 10_000): Promise<number> {
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // The furthest decision event at or below the head that is not projected yet.
      const pending = await this.store.readAll({ after: this.current, maxCount: 1000, filter: DECISION_EVENTS });
      const due = pending.filter((e) => e.position <= head);
      if (due.length === 0) return head;
      if (!this.running) throw new DecisionLogBehindError('the decision log projector is not running');
      const target = due[due.length - 1].position;
      if (this.current < target) this.store.expedite?.();
      while (this.current < target) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) {
          // The cause is in the server log; clients are not shown raw store or database errors.
          const why = this.lastError ? ': its projector is failing and retrying' : '';
          throw new DecisionLogBehindError(`the decision log is behind the event store (at ${this.current}, decisions up to ${target})${why}`);
        }
        await this.waitForAdvance(Math.min(remaining, 100));
      }
    }
  }

  private async run(): Promise<void> {
    const base = this.options.retryDelayMs ?? 200;
    await followAcrossFaults({
      signal: this.stopping.signal,
      backoff: { baseMs: base, maxMs: 5_000 },
      // Each life resumes after the last record's position (see consume): the log is where it stopped.
      life: ({ seen }) => this.consume(seen),
      onFault: (err) => {
        this.lastError = err as Error;
        this.head = undefined;
        this.failures++;
        this.failing = true;
        // /health is public: it names the fault, not the raw error (that goes to the log below).
        const reason = isStoreUnavailable(err) ? 'the event store is not reachable' : 'the decision log projector is failing';
        this.options.health?.failed(COMPONENT, reason);
        this.options.health?.restarted(COMPONENT);
        this.options.logger?.error(`decision log projector failed, restarting: ${(err as Error).message}`);
      },
    });
  }

  /** One subscription's life: from the log's last record; `seen` after each record (progress starts the backoff over). */
  private async consume(seen: (position: number) => void): Promise<void> {
    const checkpoint = (await this.store.loadCheckpoint(DECISION_LOG_SUBSCRIPTION)) ?? 0;
    const last = await this.repo.last();
    // Bounded by the head: a position changed in the database must not make the projector skip
    // decisions to come (verification reports the changed record).
    const head = await this.store.headPosition();
    const lastPosition = typeof last?.position === 'number' && Number.isSafeInteger(last.position) ? Math.min(last.position, head) : 0;
    const after = Math.max(checkpoint, lastPosition, this.current);
    this.current = after;
    this.savedPosition = Math.max(this.savedPosition, checkpoint);
    const sub = this.store.subscribe({ name: DECISION_LOG_SUBSCRIPTION, after, filter: DECISION_EVENTS, batchSize: this.options.batchSize ?? 500 });
    this.subscription = sub;
    if (this.stopped) sub.close();
    // The store answered the start: the projector is running again (the subscription itself
    // waits out later store faults).
    if (this.lastError) this.options.health?.recovered(COMPONENT);
    this.failing = false;
    const idleMs = this.options.checkpointIdleMs ?? 250;
    const every = this.options.checkpointEvery ?? 500;
    const events = sub[Symbol.asyncIterator]();
    let next = events.next();
    try {
      for (;;) {
        // While a checkpoint is owed, wait for the next event only so long; idle → save it. All
        // writes happen here, one after the other.
        const owed = this.current > this.savedPosition;
        let idleTimer: NodeJS.Timeout | undefined;
        const item = owed
          ? await Promise.race([next, new Promise<typeof IDLE>((resolve) => (idleTimer = setTimeout(() => resolve(IDLE), idleMs)))])
          : await next;
        clearTimeout(idleTimer);
        if (item === IDLE) {
          await this.saveCheckpoint();
          continue;
        }
        if (item.done) return;
        next = events.next();
        await this.project(item.value);
        this.lastError = undefined;
        seen(item.value.position);
        this.advance(item.value.position);
        if (++this.sinceSave >= every) await this.saveCheckpoint();
      }
    } finally {
      sub.close();
      // A page read still in flight must not become an unhandled rejection.
      next.catch(() => undefined);
    }
  }

  /** Appends the record of one decision event, unless it is already in the log. */
  private async project(event: RecordedEvent): Promise<void> {
    this.approvalsFrom ??= await this.repo.approvalsFrom();
    if (!isRecorded(event, this.approvalsFrom)) return;
    if (this.head === undefined) this.head = await this.repo.last();
    for (let attempt = 1; ; attempt++) {
      const record = recordFrom(event, this.head);
      try {
        const result = await this.repo.append(record);
        // Already stored (by another projector, or before a restart): the head is unknown now.
        this.head = result.appended ? record : undefined;
        return;
      } catch (err) {
        if (!(err instanceof DecisionLogHeadMovedError) || attempt >= 20) throw err;
        this.head = await this.repo.last();
      }
    }
  }

  private async saveCheckpoint(): Promise<void> {
    if (this.current <= this.savedPosition) return;
    const position = this.current;
    await this.store.saveCheckpoint(DECISION_LOG_SUBSCRIPTION, position);
    this.savedPosition = position;
    this.sinceSave = 0;
  }

  private advance(position: number): void {
    this.current = position;
    this.notify();
  }

  private notify(): void {
    for (const w of this.waiters) w();
  }

  private waitForAdvance(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }
}
