import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { parseIntParam } from '../../http/int-param';
import { ForkRunCommand } from '../commands/fork-run.command';
import { validateOverrides, type ForkResult } from '../fork-run';
import { ResumeRunCommand } from '../commands/resume-run.command';
import { parsePinChange, type ResumeResult } from '../resume-run';
import { GetRunContextQuery } from '../queries/get-run-context.query';
import type { RunContext } from '../replay';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { readWorkspaceView, type WorkspaceView } from '../workspace-view';

export type { WorkspaceView };

/** POST /v1/runs/:id/resume: an optional re-pin (parsePinChange checks the values; no body: a plain resume). */
export class ResumeRunDto {
  @IsOptional() @IsObject() models?: Record<string, unknown>;
  @IsOptional() @IsString() @MaxLength(2000) endpoint?: string;
}

export class ForkRunDto {
  // A JSON number: no conversion, so `true` or "3" is refused rather than read as 1 or 3.
  @IsInt() @Min(0) @Max(10_000_000) turn!: number;
  @IsOptional() @IsObject() overrides?: Record<string, unknown>;
}

@Controller('v1/runs')
export class SessionController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  /** The workspace's text files at the end of `?iteration` (default: the latest), rebuilt from the run's events. */
  @Get(':id/workspace')
  async workspace(@Param('id') id: string, @Query('iteration') iteration?: string): Promise<WorkspaceView> {
    return readWorkspaceView(this.store, id, parseIntParam('iteration', iteration, undefined, 1, 1000));
  }

  @Get(':id/context')
  context(@Param('id') id: string, @Query('revision') revision?: string): Promise<RunContext> {
    const r = parseIntParam('revision', revision, undefined, 0, Number.MAX_SAFE_INTEGER);
    return this.queries.execute(new GetRunContextQuery(id, r));
  }

  @Post(':id/resume')
  @HttpCode(202)
  @May('operateRuns')
  resume(@Param('id') id: string, @Body() body: ResumeRunDto, @CurrentIdentity() who: Identity): Promise<ResumeResult> {
    return this.commands.execute(new ResumeRunCommand(id, who, parsePinChange(body ?? {})));
  }

  @Post(':id/fork')
  @HttpCode(202)
  @May('operateRuns')
  fork(@Param('id') id: string, @Body() body: ForkRunDto, @CurrentIdentity() who: Identity): Promise<ForkResult> {
    return this.commands.execute(new ForkRunCommand(id, body.turn, validateOverrides(body.overrides), who));
  }
}
