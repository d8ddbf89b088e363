import { AttestationModule } from './attestation/attestation.module';
import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { ConfigModule } from './config/config.module';
import { EventsModule } from './events/events.module';
import { CommandPathModule } from './events/command-path.module';
import { HealthController } from './http/health.controller';
import { ReviewGateModule } from './review-gate/review-gate.module';
import { TeamModule } from './team/team.module';
import { SessionReplayModule } from './session-replay/session-replay.module';
import { CheckpointModule } from './checkpoint/checkpoint.module';
import { ApprovalsModule } from './team/approvals/approvals.module';
import { ObservabilityModule } from './observability/observability.module';
import { ProjectsModule } from './projects/projects.module';
import { A2aModule } from './integrations/a2a/a2a.module';
import { McpModule } from './integrations/mcp/mcp.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [ConfigModule, EventsModule, CommandPathModule, AttestationModule, AuthModule, TeamModule, ReviewGateModule, SessionReplayModule, CheckpointModule, ApprovalsModule, ObservabilityModule, ProjectsModule, A2aModule, McpModule, WebhooksModule],
  controllers: [HealthController],
})
export class AppModule {}
