import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { createEventStore } from './event-store.factory';
import { EVENT_STORE, type EventStore } from './event-store.port';

@Global()
@Module({
  providers: [
    {
      provide: EVENT_STORE,
      inject: [TRIAD_CONFIG],
      useFactory: (config: TriadConfig): Promise<EventStore> => createEventStore(config, { pgSchema: config.pgSchema }),
    },
  ],
  exports: [EVENT_STORE],
})
export class EventsModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
