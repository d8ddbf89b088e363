import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { settledWithin } from '../../shared/pause';
import type { LiveChannel, LiveMessage } from './live-channel.port';
import { PostgresChannelListener, postgresLiveRunChannel, postgresLiveWatchChannel } from '../postgres.listener';

/** How often a process repeats which runs it watches. */
const WATCH_REFRESH_MS = 10_000;
/** A publisher forgets a watch not repeated for this long (a process that crashed while watching). */
const WATCH_TTL_MS = 3 * WATCH_REFRESH_MS;
/** An announcement's JSON, at most (a NOTIFY payload is under 8000 bytes; run ids are ASCII). */
const MAX_ANNOUNCEMENT_BYTES = 7000;

/** What a process says on the schema's watch channel. */
interface Announcement {
  /** The channel instance that speaks (its own announcements come back to it, and are skipped). */
  from: string;
  /** Runs it watches (or still watches: repeated every WATCH_REFRESH_MS). */
  watch?: string[];
  /** Runs it no longer watches. */
  unwatch?: string[];
  /** It has just started listening: everyone repeats what they watch. */
  hello?: true;
}

/**
 * Live messages between the processes of one schema, on a channel per run: NOTIFY on the pool
 * (every message of a batch in one statement), LISTEN on a connection of its own to the channels
 * of the runs this process watches, and to no other. NOTIFY is transactional and ordered per sender;
 * a listener whose connection dropped misses what was sent until it is back, listening to the same
 * runs (display only).
 *
 * A run's text is sent only while another process watches the run. Every listening backend reads
 * every notification queued in the database (and skips the channels it does not listen to), so
 * text nobody elsewhere watches cost each process's backend work and the sender a statement. The
 * processes say which runs they watch on the schema's watch channel: when the first watcher of a
 * run comes and its last one goes, again every 10 s, and to a process that has just started
 * listening (its `hello`). A watch not repeated for 30 s is forgotten. Text sent between a watch and
 * the moment the publisher hears of it (a round trip) is not relayed; the run's events are.
 */
export class PostgresLiveChannel implements LiveChannel {
  private readonly listener: PostgresChannelListener;
  private readonly watchChannel: string;
  private readonly id = randomBytes(8).toString('hex');
  private onMessage?: (message: string) => void;
  private started = false;
  private closed = false;
  /** Runs watched here. */
  private readonly watchedHere = new Set<string>();
  /** Runs watched by other processes: run → process → when its watch lapses. */
  private readonly watchedElsewhere = new Map<string, Map<string, number>>();
  /** Runs watched or let go in this turn of the event loop, announced together. */
  private due: Set<string> | undefined;
  private refresh: NodeJS.Timeout | undefined;
  private announcing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    url: string,
    private readonly schema: string,
    private readonly now: () => number = Date.now,
  ) {
    this.watchChannel = postgresLiveWatchChannel(schema);
    this.listener = new PostgresChannelListener(
      url,
      [this.watchChannel],
      (payload, channel) => (channel === this.watchChannel ? this.heard(payload) : this.onMessage?.(payload)),
      // (Re)connected: what was said meanwhile was missed, so ask everyone to say it again.
      () => this.announce({ from: this.id, hello: true, watch: [...this.watchedHere] }),
    );
  }

  async publish(messages: readonly LiveMessage[]): Promise<void> {
    const wanted = messages.filter((m) => this.watchedElsewhereNow(m.runId));
    if (wanted.length === 0) return;
    // One transaction: a payload sent twice on one channel in it would be delivered once, which
    // only text longer than a message, split into identical pieces, could do (display only).
    await this.pool.query('SELECT pg_notify(m.channel, m.message) FROM unnest($1::text[], $2::text[]) AS m(channel, message)', [
      wanted.map((m) => postgresLiveRunChannel(this.schema, m.runId)),
      wanted.map((m) => m.message),
    ]);
  }

  async listen(onMessage: (message: string) => void): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.onMessage = onMessage;
    this.refresh = setInterval(() => {
      if (this.watchedHere.size > 0) this.announce({ from: this.id, watch: [...this.watchedHere] });
      for (const runId of this.watchedElsewhere.keys()) this.watchedElsewhereNow(runId); // forgets lapsed watches
    }, WATCH_REFRESH_MS);
    this.refresh.unref();
    await this.listener.startOrRetry();
  }

  async watch(runId: string): Promise<void> {
    this.watchedHere.add(runId);
    this.soon(runId);
    await this.listener.add(postgresLiveRunChannel(this.schema, runId));
  }

  async unwatch(runId: string): Promise<void> {
    this.watchedHere.delete(runId);
    this.soon(runId);
    await this.listener.remove(postgresLiveRunChannel(this.schema, runId));
  }

  async close(): Promise<void> {
    if (this.refresh) clearInterval(this.refresh);
    // Publishers stop sending this process's runs now rather than when the watches lapse.
    if (this.started && !this.closed && this.watchedHere.size > 0) this.announce({ from: this.id, unwatch: [...this.watchedHere] });
    this.closed = true;
    await settledWithin(this.announcing, 1000);
    await this.listener.close();
  }

  private watchedElsewhereNow(runId: string): boolean {
    const by = this.watchedElsewhere.get(runId);
    if (!by) return false;
    const now = this.now();
    for (const [process, until] of by) {
      if (until > now) return true;
      by.delete(process);
    }
    this.watchedElsewhere.delete(runId);
    return false;
  }

  /**
   * Watches and unwatches made in one turn of the event loop go out in one announcement, each run as
   * it stands then: a run watched and let go in the same turn is just let go.
   */
  private soon(runId: string): void {
    if (!this.due) {
      this.due = new Set();
      setImmediate(() => {
        const due = [...this.due!];
        this.due = undefined;
        this.announce({ from: this.id, watch: due.filter((r) => this.watchedHere.has(r)), unwatch: due.filter((r) => !this.watchedHere.has(r)) });
      });
    }
    this.due.add(runId);
  }

  private heard(payload: string): void {
    let said: Announcement;
    try {
      said = JSON.parse(payload) as Announcement;
    } catch {
      return;
    }
    if (typeof said?.from !== 'string' || said.from === this.id) return;
    const until = this.now() + WATCH_TTL_MS;
    for (const runId of Array.isArray(said.watch) ? said.watch : []) {
      if (typeof runId !== 'string') continue;
      const by = this.watchedElsewhere.get(runId) ?? new Map<string, number>();
      by.set(said.from, until);
      this.watchedElsewhere.set(runId, by);
    }
    for (const runId of Array.isArray(said.unwatch) ? said.unwatch : []) {
      const by = typeof runId === 'string' ? this.watchedElsewhere.get(runId) : undefined;
      by?.delete(said.from);
      if (by?.size === 0) this.watchedElsewhere.delete(runId);
    }
    if (said.hello === true && this.watchedHere.size > 0) this.announce({ from: this.id, watch: [...this.watchedHere] });
  }

  /** Says it on the watch channel, in pieces under NOTIFY's payload limit. A failure waits for the next refresh. */
  private announce(said: Announcement): void {
    if (this.closed) return;
    const pieces: string[] = [];
    let piece: Announcement = { from: said.from, ...(said.hello ? { hello: true as const } : {}) };
    let size = JSON.stringify(piece).length;
    const flush = () => {
      pieces.push(JSON.stringify(piece));
      piece = { from: said.from };
      size = JSON.stringify(piece).length;
    };
    for (const kind of ['watch', 'unwatch'] as const) {
      for (const runId of said[kind] ?? []) {
        const cost = Buffer.byteLength(JSON.stringify(runId)) + 12;
        if (size + cost > MAX_ANNOUNCEMENT_BYTES) flush();
        (piece[kind] ??= []).push(runId);
        size += cost;
      }
    }
    if (piece.watch || piece.unwatch || piece.hello || pieces.length === 0) flush();
    // One after the other: a watch and the unwatch after it must not arrive the other way round.
    this.announcing = this.announcing
      .then(() => this.pool.query('SELECT pg_notify($1, m) FROM unnest($2::text[]) AS m', [this.watchChannel, pieces]))
      .then(
        () => undefined,
        () => undefined,
      );
  }
}
