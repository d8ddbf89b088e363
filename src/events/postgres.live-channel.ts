import type { Pool } from 'pg';
import type { LiveChannel, LiveMessage } from '../team/live-relay';
import { PostgresChannelListener, postgresLiveRunChannel } from './postgres.listener';

/**
 * Live messages between the processes of one schema, on a channel per run: NOTIFY on the pool
 * (every message of a batch in one statement), LISTEN on a connection of its own to the channels
 * of the runs this process watches, and to no other. A process that watches nothing receives
 * nothing; a NOTIFY that no session listens to costs the sender little. NOTIFY is transactional
 * and ordered per sender; a listener whose connection dropped misses what was sent until it is
 * back, listening to the same runs (display only).
 */
export class PostgresLiveChannel implements LiveChannel {
  private readonly listener: PostgresChannelListener;
  private onMessage?: (message: string) => void;
  private started = false;

  constructor(
    private readonly pool: Pool,
    url: string,
    private readonly schema: string,
  ) {
    this.listener = new PostgresChannelListener(url, [], (payload) => this.onMessage?.(payload));
  }

  async publish(messages: readonly LiveMessage[]): Promise<void> {
    if (messages.length === 0) return;
    // One transaction: a payload sent twice on one channel in it would be delivered once, which
    // only text longer than a message, split into identical pieces, could do (display only).
    await this.pool.query('SELECT pg_notify(m.channel, m.message) FROM unnest($1::text[], $2::text[]) AS m(channel, message)', [
      messages.map((m) => postgresLiveRunChannel(this.schema, m.runId)),
      messages.map((m) => m.message),
    ]);
  }

  async listen(onMessage: (message: string) => void): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.onMessage = onMessage;
    await this.listener.startOrRetry();
  }

  watch(runId: string): Promise<void> {
    return this.listener.add(postgresLiveRunChannel(this.schema, runId));
  }

  unwatch(runId: string): Promise<void> {
    return this.listener.remove(postgresLiveRunChannel(this.schema, runId));
  }

  async close(): Promise<void> {
    await this.listener.close();
  }
}
