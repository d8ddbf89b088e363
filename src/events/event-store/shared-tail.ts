// One file over 400 lines on purpose: one cache whose reads, gathering, interests and resets share one invariant (which filters are covered after which position).
import { performance } from 'node:perf_hooks';
import { isStoreUnavailable } from '../errors';
import type { EventFilter, RecordedEvent, TailPage } from './event-store.port';
import { matchesFilter } from '../read-helpers';

/** An event as the tail keeps it. */
export interface TailEvent {
  event: RecordedEvent;
  /** The type as stored, which the store's own filters match (an upcaster may rename it on read). */
  storedType: string;
  /** Characters of its stored data and metadata. */
  size: number;
}

/** What a read of the store brought into the tail. */
export interface TailRead {
  /** The events read, in position order. */
  events: TailEvent[];
  /**
   * No event matching the read's filters lies in (after, scannedTo] besides those returned: the
   * last event's position when the page is full, else the store's head as the read saw it (in the
   * same snapshot), or the last event's position when the read had no filters.
   */
  scannedTo: number;
}

/** The store's side of a shared tail. */
export interface TailSource {
  /**
   * The events after `after` matching any of `filters` (every event when undefined), at most
   * `maxCount`, in position order, and how far that read looked.
   */
  readAfter(after: number, maxCount: number, filters?: readonly EventFilter[]): Promise<TailRead>;
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
  /** News someone here waits for, this soon after the last read, waits for the rest of this period, so that one read takes in several appends. */
  gatherMs?: number;
  /** The same for news no one here waits for (what urgent readers did not ask for); at least `gatherMs`. */
  lazyGatherMs?: number;
  /** A reader's filter not asked for this long is dropped from what the tail reads. */
  interestTtlMs?: number;
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
 * News no one waits for waits longer: a read of the store costs about the same CPU whether it
 * brings one event or fifty, and with several processes it is the reads, not the events, that a
 * process would otherwise spend its CPU on (every process's appends wake every other one). What
 * someone does wait for is read within `GATHER_MS`: an append of this process's that an urgent
 * reader's filter matches (the dispatcher's launches and decisions, a watched run's events), and
 * anything when a query waits for the read models to reach the head (`hurry`). The rest, such as
 * the steps of runs in the read models, lags by at most this much more.
 */
const LAZY_GATHER_MS = 40;
/**
 * A live subscription asks the tail at least once per its polling period (250 ms), so a filter not
 * asked for in this long belongs to a subscription that closed (or one busy elsewhere, which
 * finds its filter gone and reads the store once).
 */
const INTEREST_TTL_MS = 30_000;

/** The key of a filter: equal filters share one interest; undefined is every event. */
function filterKey(filter: EventFilter | undefined): string {
  if (!filter) return ALL;
  let key = filterKeys.get(filter);
  if (key === undefined) filterKeys.set(filter, (key = keyOf(filter)));
  return key;
}

/** Keys of the filters seen (a subscription passes the same object on every read). */
const filterKeys = new WeakMap<EventFilter, string>();

function keyOf(filter: EventFilter): string {
  const { types, prefixes } = normalized(filter);
  if (!types && !prefixes) return ALL;
  return JSON.stringify([types ?? null, prefixes ?? null]);
}

/** A filter's types and prefixes, each sorted without repeats, or undefined when it names none (any). */
function normalized(filter: EventFilter): { types?: string[]; prefixes?: string[] } {
  const sorted = (list?: readonly string[]) => (list && list.length > 0 ? [...new Set(list)].sort() : undefined);
  return { types: sorted(filter.types), prefixes: sorted(filter.streamPrefixes) };
}

const ALL = '*';

/**
 * The filters a read asks the store for: every reader's, merged where they ask for the same types
 * (their prefixes together; any one without prefixes makes the group every stream). Undefined when
 * one reader wants every event.
 */
export function unionOf(filters: Iterable<EventFilter | undefined>): EventFilter[] | undefined {
  const groups = new Map<string, { types?: string[]; prefixes: Set<string> | 'every stream' }>();
  for (const f of filters) {
    if (filterKey(f) === ALL) return undefined;
    const { types, prefixes } = normalized(f!);
    const key = types ? JSON.stringify(types) : ALL;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { types, prefixes: new Set() }));
    if (!prefixes) group.prefixes = 'every stream';
    else if (group.prefixes !== 'every stream') for (const p of prefixes) group.prefixes.add(p);
  }
  return [...groups.values()].map((g) => ({
    ...(g.types ? { types: g.types } : {}),
    ...(g.prefixes !== 'every stream' ? { streamPrefixes: [...g.prefixes].sort() } : {}),
  }));
}

/**
 * The newest events of a store, read once per process and shared by all its live subscriptions.
 *
 * Why triad has its own: every subscription of a process (the read models, the dispatcher, the
 * decision log's projector, the API keys, each open event stream) is woken by the same appends,
 * and each used to ask the store what was new and decode the answer itself, so one append cost
 * a round trip and a decode per subscription, in every process sharing the store. Here the first
 * subscription to wake reads what is new for all of them, and the others are served from memory.
 *
 * What it reads is what its readers ask for: the union of the filters of the subscriptions that
 * used it in the last `interestTtlMs`, so that a process whose read models fold a few types of
 * event never reads, decodes and holds the rest (in a process that drives a tenth of the runs,
 * most of what the other processes write). A reader whose filter the held events do not cover
 * (a new event stream client, say) widens the union from the next read on, which covers its filter
 * from where that read begins; until it reaches there it reads the store itself. The other readers
 * go on as they were: coverage is kept per filter, from the first read of an unbroken row of reads
 * that asked for it, so a filter dropped for a while never claims the events of the gap.
 *
 * Exact, not approximate: it holds every event matching that union in (start, end], because every
 * durable store makes position order commit order (a reader never sees a position before a lower
 * one commits: the SQL stores by their commit order, EventStoreDB because `$all` serves only
 * committed records, in log order), so a read of what matches after `end`, with the head seen in
 * the same snapshot, returns exactly what follows. A subscription behind `start`
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
  /** Each reader's filter, by key, when it was last asked for, and when an urgent reader last did. */
  private readonly interests = new Map<string, { filter: EventFilter | undefined; usedAt: number; urgentAt?: number }>();
  /** What the interests ask the store for, until they change. */
  private wants?: { keys: ReadonlySet<string> | typeof ALL; filters: EventFilter[] | undefined };
  private prunedAt = Number.NEGATIVE_INFINITY;
  /** Ends the current gathering wait early (someone waits for the news), when one is under way. */
  private gatherWake?: (left: number) => void;
  /** Someone waits for the next read: it gathers for `gatherMs` only. */
  private hurried = false;
  /** The last read filled its page: more is waiting in the store, read at once. */
  private behind = false;
  /** Every filter is covered after this position: every read since it was unfiltered. */
  private allFrom: number | undefined;
  /** Each filter covered, by key, after the position where the reads that asked for it began. */
  private readonly keyFrom = new Map<string, number>();
  /** Counts resets: a read begun before one is thrown away. */
  private generation = 0;
  private readonly interestTtlMs: number;
  private readonly pageEvents: number;
  private readonly maxChars: number;
  private readonly staleMs: number;
  private readonly gatherMs: number;
  private readonly lazyGatherMs: number;
  private readonly now: () => number;

  constructor(
    private readonly source: TailSource,
    options: SharedTailOptions = {},
  ) {
    this.pageEvents = options.pageEvents ?? PAGE_EVENTS;
    this.maxChars = options.maxChars ?? MAX_CHARS;
    this.staleMs = options.staleMs ?? STALE_MS;
    this.gatherMs = options.gatherMs ?? GATHER_MS;
    this.lazyGatherMs = Math.max(this.gatherMs, options.lazyGatherMs ?? LAZY_GATHER_MS);
    this.interestTtlMs = options.interestTtlMs ?? INTEREST_TTL_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * The events matching `filter` after `after`, at most `maxCount`, from the tail; undefined when
   * `after` lies before what the tail holds (the caller reads the store). What the tail holds
   * already is served without a read; the store is read only for a subscription at the end.
   */
  async read(after: number, maxCount: number, filter?: EventFilter, urgent = false): Promise<TailPage | undefined> {
    if (maxCount <= 0) return { events: [], scannedTo: after };
    const key = filterKey(filter);
    const now = this.now();
    let interest = this.interests.get(key);
    if (interest) interest.usedAt = now;
    else {
      this.interests.set(key, (interest = { filter, usedAt: now }));
      this.wants = undefined;
    }
    if (urgent) interest.urgentAt = now;
    if (this.ready && after < this.start) return undefined;
    // Inside the tail: served from memory when the events held cover this reader from `after` on.
    if (this.ready && after < this.end) return this.covers(key, after) ? this.serve(after, maxCount, filter) : undefined;
    // At the end: a reader not covered yet (its filter is new) has the tail read now, with its filter.
    if (!this.ready || !this.covers(key, after) || this.source.knownHead() > this.end || this.now() - this.readAt >= this.staleMs) {
      try {
        await this.refresh();
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        // Not one reader's business: start again at the head, and let each reader meet the event on its own terms.
        this.reset();
        return undefined;
      }
    }
    // Reset meanwhile, or read before this reader's filter was known: it reads the store this time.
    if (!this.ready || after < this.start || !this.covers(key, after)) return undefined;
    return this.serve(after, maxCount, filter);
  }

  /** Whether the events held include every event after `after` matching the filter of `key`. */
  private covers(key: string, after: number): boolean {
    const own = this.keyFrom.get(key);
    const from = this.allFrom === undefined ? own : own === undefined ? this.allFrom : Math.min(own, this.allFrom);
    return from !== undefined && after >= from;
  }

  /**
   * A read from `from` for the filters of `keys` was kept: a filter it asked for is covered from
   * where it was covered before without a break, else from `from`; one it left out is no longer.
   */
  private extendCoverage(from: number, keys: ReadonlySet<string> | typeof ALL): void {
    if (keys === ALL) {
      this.allFrom ??= from;
      return;
    }
    for (const key of keys) {
      const own = this.keyFrom.get(key);
      this.keyFrom.set(key, Math.min(own ?? from, this.allFrom ?? from, from));
    }
    for (const key of this.keyFrom.keys()) if (!keys.has(key)) this.keyFrom.delete(key);
    this.allFrom = undefined;
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
    // Begun a microtask later, so that a read asked for while this one starts (a source that
    // answers synchronously) joins it rather than begin a second read from the same position.
    this.refreshing ??= Promise.resolve()
      .then(() => this.readNew())
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** Someone waits for what is new (a query reading its own writes): the next read gathers for `gatherMs` only. */
  hurry(): void {
    this.hurried = true;
    this.gatherWake?.(this.readAt + this.gatherMs - this.now());
  }

  /**
   * This process appended these events: when an urgent reader (one that asked in the last
   * `interestTtlMs`) wants one of them, the read that brings them gathers for `gatherMs` only.
   */
  appended(events: Iterable<{ streamId: string; type: string }>): void {
    if (this.hurried) return;
    const since = this.now() - this.interestTtlMs;
    for (const interest of this.interests.values()) {
      if (interest.urgentAt === undefined || interest.urgentAt < since) continue;
      for (const e of events) {
        if (matchesFilter(e.streamId, e.type, interest.filter)) return this.hurry();
      }
    }
  }

  private async readNew(): Promise<void> {
    const gatherFor = this.behind ? 0 : this.hurried ? this.gatherMs : this.lazyGatherMs;
    const wait = this.readAt + gatherFor - this.now();
    if (wait > 0) await this.gather(wait);
    // What is appended from here on is not in this read: whether it is waited for is the next
    // read's. A read thrown away (a reset, an outage) leaves the hurry to the one that follows.
    const hurried = this.hurried;
    this.hurried = false;
    let kept = false;
    try {
      kept = await this.readOnce();
    } finally {
      if (!kept && hurried) this.hurried = true;
    }
  }

  /** One read of the store after `end` (from the head when not ready); false when it was thrown away. */
  private async readOnce(): Promise<boolean> {
    const at = this.now();
    const generation = this.generation;
    // A tail not ready starts at the head: a subscription further behind catches up from the store.
    const fresh = !this.ready;
    const from = fresh ? await this.source.readHead() : this.end;
    if (generation !== this.generation) return false;
    const { keys, filters } = this.wanted(at);
    const read = await this.source.readAfter(from, this.pageEvents, filters);
    // Reset meanwhile (a read that failed): what was read belongs to no one.
    if (generation !== this.generation) return false;
    if (fresh) {
      this.reset();
      this.start = this.end = from;
      this.ready = true;
    }
    this.extendCoverage(from, keys);
    this.behind = read.events.length >= this.pageEvents;
    this.readAt = at;
    this.eventsRead += read.events.length;
    for (const held of read.events) {
      deepFreeze(held.event);
      this.held.push(held);
      this.chars += held.size;
    }
    // scannedTo is at least the last event's position (TailRead).
    const end = Math.max(this.end, read.scannedTo);
    if (end === this.end) return true;
    this.end = end;
    this.letGo();
    this.source.announce(this.end);
    return true;
  }

  /** Waits `ms`, or less when `hurry` says how much is left. */
  private gather(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.gatherWake = undefined;
        resolve();
      };
      let timer = setTimeout(done, ms);
      this.gatherWake = (left) => {
        clearTimeout(timer);
        if (left > 0) timer = setTimeout(done, left);
        else done();
      };
    });
  }

  /** The filters of the readers of the last `interestTtlMs` (the others are dropped), and their union. */
  private wanted(now: number): { keys: ReadonlySet<string> | typeof ALL; filters: EventFilter[] | undefined } {
    if (now - this.prunedAt >= Math.min(1_000, this.interestTtlMs)) {
      this.prunedAt = now;
      for (const [key, interest] of this.interests) {
        if (now - interest.usedAt <= this.interestTtlMs) continue;
        this.interests.delete(key);
        this.wants = undefined;
      }
    }
    if (!this.wants) {
      this.wants = this.interests.has(ALL)
        ? { keys: ALL, filters: undefined }
        : { keys: new Set(this.interests.keys()), filters: unionOf([...this.interests.values()].map((i) => i.filter)) };
    }
    return this.wants;
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
    this.generation++;
    this.allFrom = undefined;
    this.keyFrom.clear();
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
