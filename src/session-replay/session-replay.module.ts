import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TeamModule } from '../team/team.module';
import { ForkRunHandler } from './commands/fork-run.command';
import { ResumeRunHandler } from './commands/resume-run.command';
import { SessionController } from './http/session.controller';
import { GetRunContextHandler } from './queries/get-run-context.query';

export const SESSION_HANDLERS = [ForkRunHandler, ResumeRunHandler, GetRunContextHandler];

@Module({
  imports: [CqrsModule, TeamModule],
  controllers: [SessionController],
  providers: [...SESSION_HANDLERS],
})
export class SessionReplayModule {}
