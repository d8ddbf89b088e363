import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { quoteIdent } from '../shared/postgres-tables';

/** Listener reconnect delay after its connection drops; subscriptions keep polling meanwhile. */
const LISTENER_RETRY_MS = 1000;

/** The channel `append_events` notifies for a schema; pg_notify channel names are limited to 63 bytes, so derive a short one. */
export function postgresEventsChannel(schema: string): string {
  return `triad_events_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

/**
 * The channel one run's live model text is relayed on (see PostgresLiveChannel): one per run, so
 * only the processes watching the run listen to it. Hashed: a channel name is at most 63 bytes.
 */
export function postgresLiveRunChannel(schema: string, runId: string): string {
  return `triad_live_${createHash('sha256').update(`${schema}\0${runId}`).digest('hex').slice(0, 24)}`;
}

/**
 * LISTEN on channels, on a connection of its own (a pooled one cannot hold a LISTEN): hands every
 * payload notified to `onPayload`, with its channel. Channels can be added and removed while it
 * runs. A lost connection is replaced after a pause, listening to every channel it had (what was
 * notified meanwhile is not seen: listeners poll, or the payloads are only for display);
 * `onListening` is told each time the connection listens again.
 */
export class PostgresChannelListener {
  private client: Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly channels: Set<string>;

  constructor(
    private readonly url: string,
    channels: Iterable<string>,
    private readonly onPayload: (payload: string, channel: string) => void,
    private readonly onListening: () => void = () => undefined,
  ) {
    this.channels = new Set(channels);
  }

  async start(): Promise<void> {
    // keepAlive: an idle LISTEN connection that went half-open (a dropped NAT entry, a failover
    // without a reset) is found dead by TCP and replaced, instead of staying silent for good.
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 10_000, keepAlive: true });
    client.on('notification', (msg) => {
      if (msg.payload !== undefined) this.onPayload(msg.payload, msg.channel);
    });
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    await client.connect();
    if (this.closed) {
      // Closed while connecting: the client is not used; a close that fails leaves nothing this process needs.
      await client.end().catch(() => undefined);
      return;
    }
    // Set before the LISTEN: a channel added or removed from now on is a statement queued after it.
    this.client = client;
    const listen = [...this.channels].map((c) => `LISTEN ${quoteIdent(c)};`).join(' ');
    try {
      if (listen) await client.query(listen);
    } catch (err) {
      if (this.client === client) this.client = null;
      // The LISTEN error is the one to report (thrown below); ending the half-set-up client is best effort.
      await client.end().catch(() => undefined);
      throw err;
    }
    this.onListening();
  }

  /** Listens to one more channel: now when connected, else once the connection is (back). */
  async add(channel: string): Promise<void> {
    if (this.channels.has(channel)) return;
    this.channels.add(channel);
    await this.onConnection(`LISTEN ${quoteIdent(channel)}`);
  }

  /** Stops listening to a channel (payloads already received may still be handed over). */
  async remove(channel: string): Promise<void> {
    if (!this.channels.delete(channel)) return;
    await this.onConnection(`UNLISTEN ${quoteIdent(channel)}`);
  }

  /**
   * A LISTEN or UNLISTEN on the current connection. One that fails is a connection that died under
   * it (terminated, or lost before its error event came): it is replaced, and the replacement
   * listens to the channels as they are now, this change included, so nothing is thrown.
   */
  private async onConnection(statement: string): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      await client.query(statement);
    } catch {
      this.drop(client);
    }
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
    // Closing: a connection already lost has nothing left to end.
    if (client) await client.end().catch(() => undefined);
  }

  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    // The connection is lost already (this is its end or error event); the listener restarts on a new one.
    client.end().catch(() => undefined);
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      // Not a drop: a start that fails is tried again later.
      if (!this.closed) this.start().catch(() => this.scheduleRestart());
    }, LISTENER_RETRY_MS);
    this.retry.unref();
  }
}

/** The channel on which the processes of a schema say which runs' live text they watch (see PostgresLiveChannel). */
export function postgresLiveWatchChannel(schema: string): string {
  return `triad_watch_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

/**
 * LISTEN on the events channel: hands every position notified by an append of any process to
 * `onPosition`. Until a lost connection is replaced, subscriptions fall back to polling.
 */
export class PostgresAppendListener extends PostgresChannelListener {
  constructor(url: string, channel: string, onPosition: (position: number) => void) {
    super(url, [channel], (payload) => {
      const position = Number(payload);
      if (Number.isSafeInteger(position)) onPosition(position);
    });
  }
}
