import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { IsInt, IsObject, IsOptional, Max, Min } from 'class-validator';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { parseIntParam } from '../../team/http/runs.controller';
import { ForkRunCommand, validateOverrides, type ForkResult } from '../commands/fork-run.command';
import { ResumeRunCommand } from '../commands/resume-run.command';
import { GetRunContextQuery } from '../queries/get-run-context.query';
import type { RunContext } from '../replay';

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
  ) {}

  @Get(':id/context')
  context(@Param('id') id: string, @Query('revision') revision?: string): Promise<RunContext> {
    const r = revision === undefined ? undefined : parseIntParam('revision', revision, 0, 0, Number.MAX_SAFE_INTEGER);
    return this.queries.execute(new GetRunContextQuery(id, r));
  }

  @Post(':id/resume')
  @HttpCode(202)
  @May('operateRuns')
  resume(@Param('id') id: string, @CurrentIdentity() who: Identity) {
    return this.commands.execute(new ResumeRunCommand(id, who));
  }

  @Post(':id/fork')
  @HttpCode(202)
  @May('operateRuns')
  fork(@Param('id') id: string, @Body() body: ForkRunDto, @CurrentIdentity() who: Identity): Promise<ForkResult> {
    return this.commands.execute(new ForkRunCommand(id, body.turn, validateOverrides(body.overrides), who));
  }
}
