import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Observable, Subject, filter } from 'rxjs';
import type { RecordedEvent } from '../../events/event-store/event-store.port';
import { PROCESS_ID } from '../../shared/system';
import { STORAGE, type Storage } from '../../storage/storage';
import { LiveRelay } from './live-relay';
import type { RoleName } from '../models/model.port';
import type { RunObserver } from '../driver/step-context';

export type LiveRunItem =
  | { kind: 'events'; runId: string; events: RecordedEvent[] }
  | { kind: 'delta'; runId: string; role: RoleName; turn: number; text: string };

/**
 * Live feed of what drivers do: the events local drivers append, and streamed model text (never
 * stored). Text from drivers on other processes arrives through the storage's live channel
 * (PostgreSQL: LISTEN/NOTIFY on a channel per run; EventStoreDB: a short stream, subscribed) for
 * the runs watched here (`of`: an SSE client, the CLI following a run), so an SSE client gets it
 * on whichever process it is connected to (on PostgreSQL, a process where nobody watches a run is
 * not sent its text). This process's text is published on it too. Only for display: anything that must not be
 * lost is read from the store.
 */
@Injectable()
export class LiveRunBus implements RunObserver, OnModuleInit {
  private readonly logger = new Logger(LiveRunBus.name);
  private readonly subject = new Subject<LiveRunItem>();
  private readonly relay?: LiveRelay;

  constructor(@Inject(STORAGE) storage: Pick<Storage, 'live'>, @Inject(PROCESS_ID) owner: string) {
    if (storage.live) this.relay = new LiveRelay(storage.live, owner, (d) => this.subject.next({ kind: 'delta', ...d }), this.logger);
  }

  async onModuleInit(): Promise<void> {
    // Not listening (the channel's connection failed): local text still flows; the channel retries.
    // The channel is closed with the storage (after every module's shutdown).
    await this.relay?.start().catch((err: Error) => this.logger.warn(`live text from other processes unavailable for now: ${err.message}`));
  }

  onEvents(runId: string, events: RecordedEvent[]): void {
    this.subject.next({ kind: 'events', runId, events });
  }

  onTextDelta(runId: string, role: RoleName, turn: number, text: string): void {
    this.subject.next({ kind: 'delta', runId, role, turn, text });
    this.relay?.publish({ runId, role, turn, text });
  }

  /** A run's items; while subscribed, the run's text from other processes is relayed here too. */
  of(runId: string): Observable<LiveRunItem> {
    const items = this.subject.pipe(filter((i) => i.runId === runId));
    const relay = this.relay;
    if (!relay) return items;
    return new Observable<LiveRunItem>((subscriber) => {
      const release = relay.watch(runId);
      const subscription = items.subscribe(subscriber);
      return () => {
        subscription.unsubscribe();
        release();
      };
    });
  }

  all(): Observable<LiveRunItem> {
    return this.subject.asObservable();
  }
}
