import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TeamModule } from '../team/team.module';
import { ProjectsController } from './http/projects.controller';
import { ProjectsProjection } from './projects.projection';
import { ProjectsService } from './projects.service';
import { DecideProjectHandler, LaunchProjectHandler } from './commands/project-commands';

/** Projects: task graphs whose tasks are team runs (see docs/ARCHITECTURE.md, "Projects"). */
@Module({
  imports: [CqrsModule, TeamModule],
  controllers: [ProjectsController],
  providers: [ProjectsProjection, ProjectsService, LaunchProjectHandler, DecideProjectHandler],
  exports: [ProjectsService, ProjectsProjection],
})
export class ProjectsModule {}
