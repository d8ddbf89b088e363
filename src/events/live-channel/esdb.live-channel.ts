import { randomUUID } from 'node:crypto';
import type { LiveChannel, LiveMessage } from './live-channel.port';
import type { EsdbConnection } from '../esdb.client';

/** Live messages kept on the server (older ones dropped by its scavenge): only the newest matter. */
const KEEP = 100;
/** A dropped subscription is made again after this pause. */
const RETRY_MS = 1000;

/**
 * Live messages between the processes sharing an EventStoreDB: appended to `<ns>.live` (the
 * server keeps the last 100) and read through a live subscription to that stream from its end.
 * One stream for every run: each process receives every run's messages, watched or not (the
 * live bus hands a run's text only to its watchers). What is appended while a process's
 * subscription is down is not delivered to it (display only).
 */
export class EsdbLiveChannel implements LiveChannel {
  private subscription?: { close(): void };
  private retry?: NodeJS.Timeout;
  private closed = false;
  private sized = false;

  constructor(
    private readonly conn: EsdbConnection,
    private readonly namespace: string,
  ) {}

  private get stream(): string {
    return `${this.namespace}.live`;
  }

  async publish(messages: readonly LiveMessage[]): Promise<void> {
    // One append a message, in order: a whole batch of many runs' text in one append could pass the server's size limit.
    for (const m of messages) {
      await this.conn.append(this.stream, [{ id: randomUUID(), type: 'LiveText', data: Buffer.from(m.message, 'utf8'), metadata: Buffer.from('{}') }], 'any');
    }
    if (!this.sized) {
      this.sized = true;
      await this.conn.keepLast(this.stream, KEEP);
    }
  }

  async listen(onMessage: (message: string) => void): Promise<void> {
    if (this.subscription || this.closed) return;
    const decoder = new TextDecoder();
    this.subscription = this.conn.subscribeFromEnd(
      this.stream,
      (data) => onMessage(decoder.decode(data)),
      () => {
        this.subscription = undefined;
        if (this.closed) return;
        // `listen` only opens a subscription, whose failure comes back through this same callback, which tries again.
        this.retry = setTimeout(() => void this.listen(onMessage).catch(() => undefined), RETRY_MS);
        this.retry.unref();
      },
    );
  }

  /** Nothing to do: the stream carries every run's messages. */
  async watch(): Promise<void> {}

  async unwatch(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.subscription?.close();
  }
}
