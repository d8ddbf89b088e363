import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { EVENT_STORE } from './event-store/event-store.port';
import { HEALTH_REGISTRY, HealthRegistry } from '../shared/health';
import { openStorage, STORAGE, type Storage } from '../storage/storage';
import { METRICS, TriadMetrics } from '../observability/metrics';
import { observedAppends } from '../observability/timed-appends';
import { eventLogLines } from '../observability/event-log';
import { attestingAppends, openSigning, Signing } from '../attestation/signing';
import { systemClock } from '../shared/system';

/**
 * The process's storage, opened once (`src/storage/storage.ts`), and its event store. The other
 * stores are provided from STORAGE by their modules (run checkpoints and leases: TeamModule; the
 * decision log: ReviewGateModule).
 */
@Global()
@Module({
  providers: [
    { provide: HEALTH_REGISTRY, useFactory: () => new HealthRegistry() },
    {
      provide: STORAGE,
      inject: [TRIAD_CONFIG, HEALTH_REGISTRY],
      useFactory: (config: TriadConfig, health: HealthRegistry): Promise<Storage> => openStorage(config, { pgSchema: config.pgSchema, pgPoolSize: config.pgPoolSize, health, logger: new Logger('Storage') }),
    },
    { provide: METRICS, useFactory: () => new TriadMetrics() },
    // Appends are timed for /metrics (triad_store_append_duration_seconds), and a run's lifecycle
    // and human decisions logged as they are recorded.
    // The signing key and the trust every fold of a run acts on: opened before anything reads a run.
    {
      provide: Signing,
      inject: [STORAGE, TRIAD_CONFIG],
      useFactory: async (storage: Storage, config: TriadConfig): Promise<Signing> => {
        const signing = await openSigning(storage.events, config.signing, () => systemClock.now());
        if (signing.warning) new Logger('Signing').error(signing.warning);
        return signing;
      },
    },
    {
      provide: EVENT_STORE,
      inject: [STORAGE, METRICS, Signing],
      useFactory: (storage: Storage, metrics: TriadMetrics, signing: Signing) => {
        const logger = new Logger('Events');
        return observedAppends(attestingAppends(storage.events, signing), {
          timed: (store, seconds, ok) => metrics.observeAppend(store, seconds, ok),
          appended: (streamId, events) => {
            for (const line of eventLogLines(streamId, events)) logger.log(line.message, line.fields);
          },
        });
      },
    },
  ],
  exports: [STORAGE, EVENT_STORE, HEALTH_REGISTRY, METRICS, Signing],
})
export class EventsModule implements OnApplicationShutdown {
  constructor(@Inject(STORAGE) private readonly storage: Storage) {}

  /**
   * Nest runs the shutdown hooks of global modules after every other module's (and, among global
   * modules, in reverse import order: AppModule imports this one before AuthModule, whose key
   * subscription stops first). So nothing writes any more: the supervisor has saved its last
   * checkpoints, recorded its suspensions and released its leases, and the projectors stopped in
   * onModuleDestroy. The storage then closes its stores, and last its connection (Storage.close).
   */
  async onApplicationShutdown(): Promise<void> {
    await this.storage.close();
  }
}
