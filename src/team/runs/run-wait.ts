import type { EventStore } from '../../events/event-store/event-store.port';
import { TERMINAL_STATUSES, toRunStreamId, type RunStatus } from '../domain/run-events';
import { SUMMARY_EVENT_TYPES, type RunSummary } from './run-summary';

/** `POST /v1/runs/:id/wait`'s answer (docs/API.md "Waiting for a run"). */
export type WaitAnswer =
  | { status: 'waiting'; runStatus: RunStatus; startedAt: string; endedAt: null }
  | { status: 'ok' | 'error' | 'timeout'; runStatus: RunStatus; terminationReason: RunSummary['terminationReason']; startedAt: string; endedAt: RunSummary['endedAt'] };

const waitsForAHuman = (run: RunSummary) => run.status === 'awaiting_review' || run.status === 'awaiting_approval';

/** Whether the run goes no further on its own: ended, or waiting for a human. */
export function isSettled(run: RunSummary): boolean {
  return TERMINAL_STATUSES.has(run.status) || waitsForAHuman(run);
}

/** What a wait answers for the run as it stands: `timeout` when it has not settled. */
export function waitAnswer(run: RunSummary): WaitAnswer {
  // A run waiting for a human goes no further on its own: answered at once.
  if (waitsForAHuman(run)) return { status: 'waiting', runStatus: run.status, startedAt: run.startedAt, endedAt: null };
  const ended = TERMINAL_STATUSES.has(run.status);
  return {
    status: !ended ? 'timeout' : run.status === 'completed' ? 'ok' : 'error',
    runStatus: run.status,
    terminationReason: run.terminationReason,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
  };
}

/**
 * Waits until the run settles or `timeoutMs` passes, answered from the store's subscription: the
 * run is read (`read`, which reads its own writes) once, and again after each event of its stream
 * that can change its summary — no polling. The subscription starts after the stream's last event
 * as it stood before that first read, so an event appended in between is seen, never missed.
 */
export async function waitForRunToSettle(store: EventStore, runId: string, read: () => Promise<RunSummary>, timeoutMs: number): Promise<WaitAnswer> {
  const stream = toRunStreamId(runId);
  const head = await store.streamRevision(stream);
  const [last] = head === null ? [] : await store.readStream(stream, { fromRevision: head, maxCount: 1 });
  let run = await read();
  if (isSettled(run) || timeoutMs === 0) return waitAnswer(run);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const events = store.subscribe({ after: last?.position ?? 0, filter: { streamPrefixes: [stream], types: [...SUMMARY_EVENT_TYPES] }, signal: deadline.signal, urgent: true });
    for await (const e of events) {
      if (e.streamId !== stream) continue;
      run = await read();
      if (isSettled(run)) break;
    }
  } finally {
    clearTimeout(timer);
    deadline.abort();
  }
  return waitAnswer(run);
}
