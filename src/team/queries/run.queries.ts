import { RunNotFoundError } from '../domain/run-decider';
import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { RunStatus } from '../domain/run-events';
import type { RunSummary } from '../runs/run-summary';
import { RunsProjection } from '../runs/runs.projection';
import { RunSupervisor } from '../dispatch/run-supervisor';

/** Statuses in which a run needs a driver (not ended, not waiting for a human). */
const NEEDS_A_DRIVER: ReadonlySet<RunStatus> = new Set(['queued', 'planning', 'executing', 'reviewing', 'suspended']);

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
  constructor(
    private readonly runs: RunsProjection,
    private readonly supervisor: RunSupervisor,
  ) {}

  /** The run; with `waitingFor` when it needs a driver, no process holds its lease, and this process's model is not its pin. */
  async execute({ runId }: GetRunQuery): Promise<RunSummary> {
    await this.runs.catchUp();
    const run = this.runs.get(runId);
    if (!run) throw new RunNotFoundError(runId);
    const waitingFor = NEEDS_A_DRIVER.has(run.status) ? this.supervisor.pinWait(run.pin) : undefined;
    if (!waitingFor || (await this.supervisor.drivenElsewhere(runId)) !== undefined) return run;
    return { ...run, waitingFor };
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
