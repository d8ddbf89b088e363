import { performance } from 'node:perf_hooks';
import { isStoreUnavailable } from './errors';
import type { EventFilter, RecordedEvent, TailPage } from './event-store.port';
import { matchesFilter } from './read-helpers';

/** An event as the tail keeps it. */
export interface TailEvent {
  event: RecordedEvent;
  /** The type as stored, which the store's own filters match (an upcaster may rename it on read). */
  storedType: string;
  /** Characters of its stored data and metadata. */
  size: number;
}

/** The store's side of a shared tail. */
export interface TailSource {
  /** Every event after `after`, at most `maxCount`, in position order. */
  readAfter(after: number, maxCount: number): Promise<TailEvent[]>;
  /** The head of the store as a query sees it now. */
  readHead(): Promise<number>;
  /** The highest position this process was told of (its own appends, other processes' notifications). */
  knownHead(): number;
  /** Called when a read found news, with the new last position: wakes every waiting subscription. */
  announce(position: number): void;
}

export interface SharedTailOptions {
  /** Events read per refresh. */
  pageEvents?: number;
  /** Characters of stored events the tail keeps; the oldest go first, the newest stays whatever its size. */
  maxChars?: number;
  /** A tail not read from the store for this long is read again even with no news (a lost notification). */
  staleMs?: number;
  /** News this soon after the last read waits for the rest of this period, so that one read takes in several appends. */
  gatherMs?: number;
  /** A monotonic clock in milliseconds (never the wall clock, which can step back). */
  now?: () => number;
}

const PAGE_EVENTS = 512;
/**
 * Enough for the subscriptions of a process to read the same news a few milliseconds apart (they
 * wake together), and little memory: about 256 KiB of stored JSON, about 1 MiB decoded.
 */
const MAX_CHARS = 256 * 1024;
/** The subscriptions' own polling period: one read per period for all of them, not one each. */
const STALE_MS = 250;
/**
 * Appends from every process wake every process: gathering the news of a few milliseconds into one
 * read makes a process's reads follow the time, not the other processes' append rate. It delays
 * what subscriptions see (a launch's dispatch, a read model) by at most this much.
 */
const GATHER_MS = 5;

/**
 * The newest events of a store, read once per process and shared by all its live subscriptions.
 *
 * Why triad has its own: every subscription of a process (the read models, the dispatcher, the
 * decision log's projector, the API keys, each open event stream) is woken by the same appends,
 * and each used to ask the store what was new and decode the answer itself, so one append cost
 * a round trip and a decode per subscription, in every process sharing the store. Here the first
 * subscription to wake reads what is new, unfiltered, and the others are served from memory.
 *
 * Exact, not approximate: it holds every event in (start, end], because the SQL stores make
 * position order commit order (a reader never sees a position before a lower one commits), so a
 * read of everything after `end` returns exactly what follows. A subscription behind `start`
 * (catching up, or left behind by a burst) is not served and reads the store as before, and so
 * is every subscription for a moment after a read that failed for another reason than an outage
 * (an event that does not decode): the tail starts again at the head, and only the subscriptions
 * whose filter matches that event meet it, as they would without the tail. Events handed out are
 * frozen: every subscriber gets the same objects.
 */
export class SharedTail {
  /** Events read from the store into the tail so far (benchmarks count what a process reads). */
  eventsRead = 0;
  /** The events held, in position order, from index `first` on (the ones before are let go). */
  private held: TailEvent[] = [];
  private first = 0;
  private start = 0;
  private end = 0;
  private chars = 0;
  private ready = false;
  private readAt = Number.NEGATIVE_INFINITY;
  private refreshing?: Promise<void>;
  private readonly pageEvents: number;
  private readonly maxChars: number;
  private readonly staleMs: number;
  private readonly gatherMs: number;
  private readonly now: () => number;

  constructor(
    private readonly source: TailSource,
    options: SharedTailOptions = {},
  ) {
    this.pageEvents = options.pageEvents ?? PAGE_EVENTS;
    this.maxChars = options.maxChars ?? MAX_CHARS;
    this.staleMs = options.staleMs ?? STALE_MS;
    this.gatherMs = options.gatherMs ?? GATHER_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * The events matching `filter` after `after`, at most `maxCount`, from the tail; undefined when
   * `after` lies before what the tail holds (the caller reads the store). What the tail holds
   * already is served without a read; the store is read only for a subscription at the end.
   */
  async read(after: number, maxCount: number, filter?: EventFilter): Promise<TailPage | undefined> {
    if (maxCount <= 0) return { events: [], scannedTo: after };
    if (this.ready && after < this.start) return undefined;
    if (this.ready && after < this.end) return this.serve(after, maxCount, filter);
    if (!this.ready || this.source.knownHead() > this.end || this.now() - this.readAt >= this.staleMs) {
      try {
        await this.refresh();
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        // Not one reader's business: start again at the head, and let each reader meet the event on its own terms.
        this.reset();
        return undefined;
      }
    }
    if (after < this.start) return undefined;
    return this.serve(after, maxCount, filter);
  }

  private serve(after: number, maxCount: number, filter: EventFilter | undefined): TailPage {
    const events: RecordedEvent[] = [];
    for (let i = this.firstAfter(after); i < this.held.length; i++) {
      const { event, storedType } = this.held[i];
      if (!matchesFilter(event.streamId, storedType, filter)) continue;
      events.push(event);
      if (events.length === maxCount) return { events, scannedTo: event.position };
    }
    return { events, scannedTo: Math.max(after, this.end) };
  }

  /** The index of the first event held after `after`. */
  private firstAfter(after: number): number {
    let lo = this.first;
    let hi = this.held.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.held[mid].event.position <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** One read of the store for every subscription that wants one now. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.readNew().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async readNew(): Promise<void> {
    const wait = this.readAt + this.gatherMs - this.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const at = this.now();
    if (!this.ready) {
      // Starts at the head: a subscription further behind catches up from the store.
      const head = await this.source.readHead();
      this.reset();
      this.start = this.end = head;
      this.ready = true;
    }
    const read = await this.source.readAfter(this.end, this.pageEvents);
    this.readAt = at;
    this.eventsRead += read.length;
    if (read.length === 0) return;
    for (const held of read) {
      deepFreeze(held.event);
      this.held.push(held);
      this.chars += held.size;
    }
    this.end = read[read.length - 1].event.position;
    this.letGo();
    this.source.announce(this.end);
  }

  /** Lets the oldest events go past the size kept (never the newest). */
  private letGo(): void {
    while (this.chars > this.maxChars && this.held.length - this.first > 1) {
      const gone = this.held[this.first++];
      this.chars -= gone.size;
      this.start = gone.event.position;
    }
    if (this.first > 1024 && this.first * 2 > this.held.length) {
      this.held = this.held.slice(this.first);
      this.first = 0;
    }
  }

  private reset(): void {
    this.held = [];
    this.first = 0;
    this.chars = 0;
    this.ready = false;
  }
}

/** Freezes an event's envelope, data and metadata all the way down (JSON: no cycles). */
export function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object') return;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}
