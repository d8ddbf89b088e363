import { RunNotFoundError } from '../../team/domain/run-decider';
import { Inject } from '@nestjs/common';
import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { loadRunHistory } from '../../team/runs/run-history';
import { contextOf, replayRun, type RunContext } from '../replay';

export class GetRunContextQuery {
  constructor(
    readonly runId: string,
    /** The run's own stream revision; latest when absent. */
    readonly revision?: number,
  ) {}
}

@QueryHandler(GetRunContextQuery)
export class GetRunContextHandler implements IQueryHandler<GetRunContextQuery, RunContext> {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async execute({ runId, revision }: GetRunContextQuery): Promise<RunContext> {
    const history = await loadRunHistory(this.store, runId, revision);
    if (history.length === 0) throw new RunNotFoundError(runId);
    const { state, completeness } = replayRun(history, runId, revision);
    return contextOf(state, completeness);
  }
}
