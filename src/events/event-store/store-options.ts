import type { UpcasterRegistry } from '../upcasting';

/**
 * What every adapter of the event store port is opened with; each adapter's own options extend
 * it. Beside the port, so that no adapter depends on another to be configured.
 */
export interface StoreOptions {
  /** Largest serialised event accepted (default DEFAULT_MAX_EVENT_BYTES of the port). */
  maxEventBytes?: number;
  /** Upgrades stored events of older shapes as they are read. */
  upcasters?: UpcasterRegistry;
}
