import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../events/event-store/event-store.port';
import { ApiKeyDirectory } from '../identity';
import { API_KEYS_STREAM, keyEventTrusted, type ApiKeyData } from './api-key-events';
import { followApiKeys } from './follow-api-keys';

/**
 * Feeds the keys stored with `triad keys add` into the ApiKeyDirectory: all of them at boot (before
 * the app serves a request), then every new one from a store subscription, so a key added by
 * another process (the CLI next to a running server) is accepted within a poll interval.
 */
@Injectable()
export class StoredApiKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(StoredApiKeys.name);
  private readonly closing = new AbortController();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(ApiKeyDirectory) private readonly directory: ApiKeyDirectory,
  ) {}

  async onModuleInit(): Promise<void> {
    const history = await this.store.readStream(API_KEYS_STREAM);
    for (const e of history) this.apply(e);
    // Runs until shutdown, in the background: following never rejects (each fault is logged by
    // `onFault` and followed by a retry; the abort at shutdown ends it).
    void this.follow(history.length > 0 ? history[history.length - 1].position : 0);
  }

  /** Follows the store from `from`; if the subscription fails (a lost connection), resumes where it stopped. */
  private follow(from: number): Promise<void> {
    return followApiKeys(this.store, from, {
      signal: this.closing.signal,
      apply: (e) => this.apply(e),
      onFault: (err) => this.logger.error(`following stored API keys failed (retrying): ${(err as Error).message}`),
    });
  }

  private apply(e: RecordedEvent): void {
    // The prefix filter also matches e.g. `apikeys-x`; only the stream itself holds keys.
    if (e.streamId !== API_KEYS_STREAM || (e.type !== 'ApiKeyAdded' && e.type !== 'ApiKeyReplaced')) return;
    const d = e.data as ApiKeyData;
    if (!keyEventTrusted(e)) {
      this.logger.warn(`stored API key '${String(d.name)}' (revision ${e.revision}) has no valid attestation; ignored`);
      return;
    }
    const hash = Buffer.from(d.secretHash, 'hex');
    // A malformed hash would make the constant-time comparison throw on every request.
    if (hash.length !== 32) {
      this.logger.warn(`stored API key '${d.name}' (revision ${e.revision}) has no valid sha256 hash; ignored`);
      return;
    }
    this.directory.addHashed(d.name, d.roles, hash, 'store');
  }

  onApplicationShutdown(): void {
    this.closing.abort();
  }
}
