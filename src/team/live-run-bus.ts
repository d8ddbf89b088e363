import { Injectable } from '@nestjs/common';
import { Subject, filter, type Observable } from 'rxjs';
import type { RecordedEvent } from '../events/event-store.port';
import type { RoleName } from './models/model.port';
import type { RunObserver } from './run-driver';

export type LiveRunItem =
  | { kind: 'events'; runId: string; events: RecordedEvent[] }
  | { kind: 'delta'; runId: string; role: RoleName; turn: number; text: string };

/**
 * In-process live feed of what local drivers do: streamed model text (never stored) and the events
 * they append. Only for display: anything that must not be lost is read from the store.
 */
@Injectable()
export class LiveRunBus implements RunObserver {
  private readonly subject = new Subject<LiveRunItem>();

  onEvents(runId: string, events: RecordedEvent[]): void {
    this.subject.next({ kind: 'events', runId, events });
  }

  onTextDelta(runId: string, role: RoleName, turn: number, text: string): void {
    this.subject.next({ kind: 'delta', runId, role, turn, text });
  }

  of(runId: string): Observable<LiveRunItem> {
    return this.subject.pipe(filter((i) => i.runId === runId));
  }

  all(): Observable<LiveRunItem> {
    return this.subject.asObservable();
  }
}
