import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { quoteIdent } from '../shared/postgres-tables';

/** Listener reconnect delay after its connection drops; subscriptions keep polling meanwhile. */
const LISTENER_RETRY_MS = 1000;

/** The channel `append_events` notifies for a schema; pg_notify channel names are limited to 63 bytes, so derive a short one. */
export function postgresEventsChannel(schema: string): string {
  return `triad_events_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

/** The channel live model text is relayed on between the processes of a schema (see PostgresLiveChannel). */
export function postgresLiveChannel(schema: string): string {
  return `triad_live_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

/**
 * LISTEN on a channel, on a connection of its own (a pooled one cannot hold a LISTEN): hands every
 * payload notified to `onPayload`. A lost connection is replaced after a pause (what was notified
 * meanwhile is not seen: listeners poll, or the payloads are only for display).
 */
export class PostgresChannelListener {
  private client: Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly onPayload: (payload: string) => void,
  ) {}

  async start(): Promise<void> {
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 10_000 });
    client.on('notification', (msg) => {
      if (msg.payload !== undefined) this.onPayload(msg.payload);
    });
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    await client.connect();
    await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  /** Like `start`; a failure is retried after a pause (and reported). */
  async startOrRetry(): Promise<void> {
    try {
      await this.start();
    } catch (err) {
      this.scheduleRestart();
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.closed) this.start().catch(() => this.scheduleRestart());
    }, LISTENER_RETRY_MS);
    this.retry.unref();
  }
}

/**
 * LISTEN on the events channel: hands every position notified by an append of any process to
 * `onPosition`. Until a lost connection is replaced, subscriptions fall back to polling.
 */
export class PostgresAppendListener extends PostgresChannelListener {
  constructor(url: string, channel: string, onPosition: (position: number) => void) {
    super(url, channel, (payload) => {
      const position = Number(payload);
      if (Number.isSafeInteger(position)) onPosition(position);
    });
  }
}
