import type { Pool } from 'pg';
import type { LiveChannel } from '../team/live-relay';
import { PostgresChannelListener, postgresLiveChannel } from './postgres.listener';

/**
 * Live messages between the processes of one schema: NOTIFY on the pool (one message a
 * statement), LISTEN on a connection of its own. NOTIFY is transactional and ordered per sender;
 * a listener whose connection dropped misses what was sent until it is back (display only).
 */
export class PostgresLiveChannel implements LiveChannel {
  private readonly channel: string;
  private listener?: PostgresChannelListener;

  constructor(
    private readonly pool: Pool,
    private readonly url: string,
    schema: string,
  ) {
    this.channel = postgresLiveChannel(schema);
  }

  async publish(message: string): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, message]);
  }

  async listen(onMessage: (message: string) => void): Promise<void> {
    if (this.listener) return;
    this.listener = new PostgresChannelListener(this.url, this.channel, onMessage);
    await this.listener.startOrRetry();
  }

  async close(): Promise<void> {
    await this.listener?.close();
  }
}
