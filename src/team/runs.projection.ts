import { Inject, Injectable } from '@nestjs/common';
import type { RecordedEvent } from '../events/event-store.port';
import { READ_MODEL_FEED, type ReadModelFeed } from '../events/read-model-feed';
import { TERMINAL_STATUSES, type RunStatus } from './domain/run-events';
import { applyToSummary, runIdOfStream, type RunSummary, type RunSummaryState } from './run-summary';

/** Its name in the read-model feed (a failure of its fold is reported under it). */
const PROJECTION = 'runs';

/**
 * The runs read model, folded from the whole store by the process's `ReadModelFeed`, so it sees
 * runs written by any process. It is rebuilt from the start at each boot (it lives in memory), and
 * queries wait for it to reach the store's head, so a client reads its own writes.
 */
@Injectable()
export class RunsProjection {
  private readonly runs = new Map<string, RunSummaryState>();

  constructor(@Inject(READ_MODEL_FEED) private readonly feed: ReadModelFeed) {
    feed.register(PROJECTION, (e) => this.apply(e));
  }

  private apply(e: RecordedEvent): void {
    const runId = runIdOfStream(e.streamId);
    if (!runId) return;
    const next = applyToSummary(this.runs.get(runId), e);
    if (next) this.runs.set(runId, next);
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  catchUp(timeoutMs?: number): Promise<void> {
    return this.feed.catchUp(timeoutMs);
  }

  get(runId: string): RunSummary | undefined {
    return this.runs.get(runId)?.summary;
  }

  list(filter: { status?: RunStatus; limit?: number } = {}): RunSummary[] {
    const all = [...this.runs.values()].map((s) => s.summary).filter((s) => !filter.status || s.status === filter.status);
    all.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
    return filter.limit ? all.slice(0, filter.limit) : all;
  }

  nonTerminal(): RunSummary[] {
    return [...this.runs.values()].map((s) => s.summary).filter((s) => !TERMINAL_STATUSES.has(s.status));
  }

}
