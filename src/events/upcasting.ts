import type { EventMetadata } from './event-store/event-store.port';

/**
 * Turns an event of `type` at `fromVersion` into the next version. Upcasters chain: an event at
 * version 1 passes through the 1→2 and 2→3 upcasters before a reader sees it. Stored bytes never change.
 */
export interface Upcaster {
  type: string;
  fromVersion: number;
  upcast(data: unknown, metadata: EventMetadata): { type?: string; data: unknown };
}

export class UpcasterRegistry {
  private readonly byKey = new Map<string, Upcaster>();

  constructor(upcasters: Upcaster[] = []) {
    for (const u of upcasters) this.register(u);
  }

  register(upcaster: Upcaster): this {
    const key = `${upcaster.type}@${upcaster.fromVersion}`;
    if (this.byKey.has(key)) throw new Error(`an upcaster for ${key} is already registered`);
    this.byKey.set(key, upcaster);
    return this;
  }

  get size(): number {
    return this.byKey.size;
  }

  /** Applies every upcaster in the chain; returns the current type, data and schema version. */
  apply(type: string, data: unknown, metadata: EventMetadata): { type: string; data: unknown; metadata: EventMetadata } {
    let current = { type, data, metadata };
    // Bounded so a registry mistake cannot loop forever.
    for (let guard = 0; guard < 1000; guard++) {
      const u = this.byKey.get(`${current.type}@${current.metadata.schemaVersion}`);
      if (!u) return current;
      const next = u.upcast(current.data, current.metadata);
      current = {
        type: next.type ?? current.type,
        data: next.data,
        metadata: { ...current.metadata, schemaVersion: current.metadata.schemaVersion + 1 },
      };
    }
    throw new Error(`upcaster chain for ${type} did not terminate`);
  }
}
