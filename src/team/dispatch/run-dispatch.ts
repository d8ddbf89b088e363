import type { OnApplicationShutdown } from '@nestjs/common';
import type { EventStore, RecordedEvent, Subscription } from '../../events/event-store/event-store.port';
import { isStoreUnavailable } from '../../events/errors';
import { followAcrossFaults } from '../../events/outlast-store';
import type { HealthRegistry } from '../../shared/health';
import { RUN_STREAM_PREFIX } from '../domain/run-events';
import { runIdOfStream } from '../runs/run-summary';
import type { DispatchLogger } from './dispatch-options';
import type { Wake, WakeReason } from './driver-pool';

/**
 * The durable name of the dispatcher's subscription (its saved position survives restarts). One
 * name for every process sharing the store, on purpose: every process reacts to every event that
 * wakes a driver, so a position saved by any of them is one up to which each event's run was
 * tried by some process — by the one it was placed on, or by every one when it was not placed.
 * What was taken (or placed) and then lost with its process is recovery's (expired leases), what
 * no process had room for waits queued for a free slot. A process starting (a new process id each
 * time) resumes from there; a position saved behind another's only replays events, which is harmless.
 */
export const DISPATCHER_SUBSCRIPTION = 'run-dispatcher';

/**
 * Events after which a run needs a driver: it was launched, forked or resumed, or a human (or a
 * timeout) decided what it waited for. A driver started on a run with nothing to do stops at once
 * and records nothing, so the rule can stay this simple.
 */
export const WAKES_A_DRIVER = ['RunLaunched', 'RunForked', 'RunResumed', 'RunRepinned', 'ReviewDecided', 'ToolApprovalDecided'] as const;

/** The run an event wakes a driver for, if any. */
export function runToWake(event: Pick<RecordedEvent, 'type' | 'streamId'>): string | undefined {
  return (WAKES_A_DRIVER as readonly string[]).includes(event.type) ? runIdOfStream(event.streamId) : undefined;
}

/**
 * Whether an event leaves its run to another process: it was placed on that one before it was
 * appended (metadata `placedOn`, see Placement.place), which holds the run's lease already, so
 * trying it here would cost a lease statement only to find it held. If that process died before
 * driving the run, the lease it was placed under expires and recovery takes the run.
 */
export function placedElsewhere(event: Pick<RecordedEvent, 'metadata'>, owner: string): boolean {
  const on = event.metadata?.placedOn;
  return typeof on === 'string' && on !== owner;
}

/** How often the subscription's position is saved while events arrive. */
const SAVE_EVERY_MS = 1000;
const COMPONENT = 'run dispatcher';

/** What the dispatcher needs of the driver pool: who it is, whether a run is driven here, to wake one, and to hear of free slots. */
export interface DriverWaker {
  readonly owner: string;
  isDriving(runId: string): boolean;
  /** Resolves once the lease is decided. */
  wake(runId: string, why: WakeReason): Promise<Pick<Wake, 'driving' | 'queued'>>;
  onSlotFreed(listener: () => void): () => void;
}

/**
 * Reactions from the store: a named, checkpointed subscription to the events that wake a driver,
 * on every serving process. For each, the process tries to take the run's lease and drives the run
 * if it gets it; processes that do not get it go on (another one drives it). An event placed on
 * another process is left to that one without a statement (placedElsewhere). A launch, a resume, a
 * fork or a decision is never lost to a process stopping between its append and the driver's
 * start: the event is in the store, and the subscription resumes from its saved position (events
 * seen twice are harmless — a run already driven, or with nothing to do, is left alone). A run woken
 * while every slot here is taken (queued: no process had room for its launch) waits in this
 * dispatcher's queue and is woken again, in launch order, when a slot frees here; every serving
 * process saw its launch and queued it too, so the first with a free slot takes it. Runs whose
 * driver died with its process, or placed on a process that died before driving them, are
 * recovery's (RecoveryService: expired leases). `triad serve` starts it; team.module.ts builds it
 * (framework-free, so that unit specs build it too).
 */
export class RunDispatcher implements OnApplicationShutdown {
  private subscription?: Subscription;
  private readonly stopping = new AbortController();
  private running?: Promise<void>;
  private position = 0;
  private saved = 0;
  private savedAt = 0;
  /** Runs woken while every slot here was taken, in the order they came: woken again when a slot frees. */
  private readonly queued = new Set<string>();
  private waking?: Promise<void>;
  private wakeAgain = false;
  private unlisten?: () => void;

  constructor(
    private readonly store: EventStore,
    private readonly health: HealthRegistry,
    private readonly drivers: DriverWaker,
    private readonly logger: DispatchLogger = { log: () => undefined, warn: () => undefined, error: () => undefined },
  ) {}

  /**
   * Starts dispatching (idempotent); started by `triad serve`, not by one-shot CLI commands.
   * Resolves once the starting position is known: every event appended after that is dispatched.
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.unlisten ??= this.drivers.onSlotFreed(() => this.slotFreed());
    // A store that never had a dispatcher (a new store, or one written by an older triad) starts
    // at its head: what came before is recovery's, not a burst of old launches. A store that does
    // not answer now is waited out in the background (from its saved position, or its head then).
    let from: number | undefined;
    try {
      from = (await this.store.loadCheckpoint(DISPATCHER_SUBSCRIPTION)) ?? (await this.store.headPosition());
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
    }
    this.running ??= this.run(from);
  }

  private async run(from: number | undefined): Promise<void> {
    await followAcrossFaults({
      signal: this.stopping.signal,
      from,
      life: async ({ after, resumed, seen }) => {
        try {
          const start = after ?? (await this.store.loadCheckpoint(DISPATCHER_SUBSCRIPTION)) ?? (await this.store.headPosition());
          if (after === undefined) seen(start);
          this.position = Math.max(this.position, start);
          if (resumed) {
            // Restarting after a failure: healthy again once the store answers.
            await this.store.headPosition();
            this.health.recovered(COMPONENT);
            this.logger.log(`dispatching again after position ${this.position}`);
          }
          const sub = this.store.subscribe({
            after: this.position,
            filter: { streamPrefixes: [RUN_STREAM_PREFIX], types: [...WAKES_A_DRIVER] },
            signal: this.stopping.signal,
            // A launch or a decision made through this process is dispatched at once.
            urgent: true,
          });
          this.subscription = sub;
          for await (const event of sub) {
            const runId = runToWake(event);
            // Awaited: the lease is decided before the next event (the drive itself goes on in the background).
            if (runId && !this.drivers.isDriving(runId) && !placedElsewhere(event, this.drivers.owner)) await this.wake(runId);
            this.position = event.position;
            seen(event.position);
            await this.save(false);
          }
        } finally {
          this.subscription?.close();
        }
      },
      onFault: (err) => {
        const reason = isStoreUnavailable(err) ? 'the event store is not reachable' : (err as Error).message;
        this.health.failed(COMPONENT, reason);
        this.health.restarted(COMPONENT);
        this.logger.error(`run dispatcher stopped, restarting after position ${this.position}: ${reason}`);
      },
    });
  }

  /** Wakes the run's driver; a run this process has no slot for waits in the queue. */
  private async wake(runId: string): Promise<void> {
    if ((await this.drivers.wake(runId, 'event')).queued) this.queued.add(runId);
  }

  /** A slot freed here: the queued runs are woken, one wake at a time (a wake asked for meanwhile follows). */
  private slotFreed(): void {
    if (this.queued.size === 0) return;
    if (this.waking) {
      this.wakeAgain = true;
      return;
    }
    this.waking = this.wakeQueued()
      .catch((err: unknown) => this.logger.error(`queued runs not woken (the next free slot tries again): ${(err as Error).message}`))
      .finally(() => {
        this.waking = undefined;
        if (this.wakeAgain) {
          this.wakeAgain = false;
          this.slotFreed();
        }
      });
  }

  /**
   * Wakes the queued runs in the order they came until one finds every slot taken again. A run
   * driven now, here or elsewhere (its lease held), or left to a process matching its pin leaves
   * the queue; one that has ended or waits for a human meanwhile gets a driver that stops at once.
   */
  private async wakeQueued(): Promise<void> {
    for (const runId of this.queued) {
      if (this.stopping.signal.aborted) return;
      if ((await this.drivers.wake(runId, 'queued')).queued) return;
      this.queued.delete(runId);
    }
  }

  /** Saves the position, at most once a second unless `force`. */
  private async save(force: boolean): Promise<void> {
    if (this.position <= this.saved || (!force && Date.now() - this.savedAt < SAVE_EVERY_MS)) return;
    const position = this.position;
    this.savedAt = Date.now();
    await this.store.saveCheckpoint(DISPATCHER_SUBSCRIPTION, position);
    this.saved = position;
  }

  /** Stops dispatching and saves the position. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.unlisten?.();
    this.subscription?.close();
    // The loop ends by itself once stopped (it catches what it meets): nothing is dropped here.
    await this.running;
    await this.waking;
    await this.save(true).catch((err: unknown) => {
      // The next start replays the events since the last saved position: harmless (see DISPATCHER_SUBSCRIPTION).
      this.logger.warn(`dispatcher position not saved at stop: ${(err as Error).message}`);
    });
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }
}
