import { Logger, Module } from '@nestjs/common';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import { METRICS, type TriadMetrics } from '../observability/metrics';
import { packageVersion } from '../cli/cli-io';
import { CLOCK, PROCESS_ID } from '../shared/system';
import type { Clock } from '../shared/ports';
import { STORAGE, type Storage } from '../storage/storage';
import { RUN_LEASES, type RunLeases } from '../team/leases/run-leases.port';
import { TeamModule } from '../team/team.module';
import { runGoals } from './run-goals';
import { WEBHOOK_STORE, type WebhookStore } from './store/webhook-store.port';
import { WebhookDelivery } from './webhook-delivery';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/**
 * Outbound webhooks: endpoints (the store's), the routes for admins, and the delivery that
 * follows the event log (`triad serve` starts it; docs/OPERATIONS.md, "Webhooks").
 */
@Module({
  imports: [TeamModule],
  controllers: [WebhooksController],
  providers: [
    { provide: WEBHOOK_STORE, inject: [STORAGE], useFactory: (s: Storage): WebhookStore | null => s.webhooks ?? null },
    {
      provide: WebhookDelivery,
      inject: [WEBHOOK_STORE, EVENT_STORE, RUN_LEASES, PROCESS_ID, CLOCK, TRIAD_CONFIG, METRICS],
      useFactory: (webhooks: WebhookStore | null, events: EventStore, leases: RunLeases, owner: string, clock: Clock, config: TriadConfig, metrics: TriadMetrics) =>
        webhooks &&
        new WebhookDelivery({
          webhooks,
          leases,
          owner,
          leaseTtlMs: config.leaseTtlMs,
          now: () => clock.now(),
          worker: {
            events,
            webhooks,
            schedule: { baseMs: config.webhooks.retryBaseMs, maxDelayMs: config.webhooks.retryMaxMs, giveUpAfterMs: config.webhooks.giveUpAfterMs },
            timeoutMs: config.webhooks.timeoutMs,
            publicUrl: config.publicUrl,
            userAgent: `triad/${packageVersion()} (webhooks)`,
            goalOf: runGoals(events),
            now: () => clock.now(),
            random: Math.random,
            observe: (outcome) => metrics.observeWebhookDelivery(outcome),
            logger: new Logger('Webhooks'),
          },
        }),
    },
    {
      provide: WebhooksService,
      inject: [WEBHOOK_STORE, EVENT_STORE, CLOCK, WebhookDelivery],
      useFactory: (webhooks: WebhookStore | null, events: EventStore, clock: Clock, delivery: WebhookDelivery | null) =>
        new WebhooksService(webhooks, events, () => new Date(clock.now()), () => delivery?.poke()),
    },
  ],
  exports: [WebhooksService, WebhookDelivery],
})
export class WebhooksModule {}
