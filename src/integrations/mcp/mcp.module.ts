import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { ProjectsModule } from '../../projects/projects.module';
import { ReviewGateModule } from '../../review-gate/review-gate.module';
import { TeamModule } from '../../team/team.module';
import { McpController } from './mcp.controller';

/** triad's MCP server over streamable HTTP (`/mcp`); `triad mcp` serves the same tools on stdio. */
@Module({
  imports: [CqrsModule, TeamModule, ProjectsModule, ReviewGateModule],
  controllers: [McpController],
})
export class McpModule {}
