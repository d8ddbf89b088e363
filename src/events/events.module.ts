import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { createEventStore } from './event-store.factory';
import { EVENT_STORE, type EventStore } from './event-store.port';
import { HEALTH_REGISTRY, HealthRegistry } from '../shared/health';

@Global()
@Module({
  providers: [
    { provide: HEALTH_REGISTRY, useFactory: () => new HealthRegistry() },
    {
      provide: EVENT_STORE,
      inject: [TRIAD_CONFIG, HEALTH_REGISTRY],
      useFactory: (config: TriadConfig, health: HealthRegistry): Promise<EventStore> => createEventStore(config, { pgSchema: config.pgSchema, health }),
    },
  ],
  exports: [EVENT_STORE, HEALTH_REGISTRY],
})
export class EventsModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
