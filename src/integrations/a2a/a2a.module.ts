import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { ProjectsModule } from '../../projects/projects.module';
import { A2aController } from './a2a.controller';

/** triad as an A2A agent: the agent card and the JSON-RPC endpoint over runs and projects. */
@Module({
  imports: [CqrsModule, ProjectsModule],
  controllers: [A2aController],
})
export class A2aModule {}
