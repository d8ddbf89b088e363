import { RunNotFoundError } from '../domain/run-decider';
import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { RunStatus } from '../domain/run-events';
import type { RunSummary } from '../run-summary';
import { RunsProjection } from '../runs.projection';

export class GetRunQuery {
  constructor(readonly runId: string) {}
}

export class ListRunsQuery {
  constructor(
    readonly status?: RunStatus,
    readonly limit?: number,
  ) {}
}

@QueryHandler(GetRunQuery)
export class GetRunHandler implements IQueryHandler<GetRunQuery, RunSummary> {
  constructor(private readonly runs: RunsProjection) {}

  async execute({ runId }: GetRunQuery): Promise<RunSummary> {
    await this.runs.catchUp();
    const run = this.runs.get(runId);
    if (!run) throw new RunNotFoundError(runId);
    return run;
  }
}

@QueryHandler(ListRunsQuery)
export class ListRunsHandler implements IQueryHandler<ListRunsQuery, RunSummary[]> {
  constructor(private readonly runs: RunsProjection) {}

  async execute({ status, limit }: ListRunsQuery): Promise<RunSummary[]> {
    await this.runs.catchUp();
    return this.runs.list({ status, limit });
  }
}
