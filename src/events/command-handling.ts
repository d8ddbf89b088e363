import type { Clock, Ids } from '../shared/ports';
import { systemClock, uuidIds } from '../shared/system';
import { untilStoreAnswers } from './outlast-store';
import { WrongExpectedRevisionError } from './errors';
import type { AppendResult, EventMetadata, EventStore, ExpectedRevision, NewEvent, RecordedEvent } from './event-store/event-store.port';

export interface DomainEvent {
  type: string;
  data: unknown;
}

/** The schema version new events are written at; upcasters bring older events to it on read. */
export const EVENT_SCHEMA_VERSION = 1;

/** Who acts and in which flow: what every appended event's metadata records. */
export interface CommandContext {
  /** `user:<name>`, `agent:<role>:<runId>` or `system`. */
  actor: string;
  /** The flow the events belong to (a run's id for everything about that run). */
  correlationId: string;
  /** The event or request that caused these events, when one did. */
  causationId?: string | null;
  /** The run the events belong to, when they belong to one. */
  runId?: string;
  /**
   * The serving process a run was placed on before these events were appended (its lease taken in
   * that process's name): other processes' reactions leave the run to it without asking the store.
   */
  placedOn?: string;
}

/** How a stream's state is read and advanced, for the command path. */
export interface StreamModel<S extends { revision: number }, E extends DomainEvent> {
  streamId: string;
  /** Reads and folds the stream (from a checkpoint, with inherited history: the model's business). */
  load(): Promise<S>;
  /** The state of a stream that does not exist yet (used with `assumeNew`). */
  initial(): S;
  /** Folds one appended event into the state (may mutate it); returns the new state. */
  evolve(state: S, event: RecordedEvent<E['data']> & E): S;
}

export interface CommandResult<S, E extends DomainEvent> {
  /** The state after the decided events were appended (the state read, when nothing was decided). */
  state: S;
  /** The events appended, as recorded. */
  events: Array<RecordedEvent<E['data']> & E>;
}

export interface CommandOptions {
  /** Reads and decides again after a concurrent append, at most this many times in all (default 5). */
  maxAttempts?: number;
  /**
   * The stream is expected not to exist: decide on `initial()` without reading, append with
   * `no_stream`; when it does exist after all, read it and decide again (launches, forks).
   */
  assumeNew?: boolean;
}

export interface DurableAppendOptions {
  /** Stops waiting out an outage; the append's last error is rethrown. */
  signal: AbortSignal;
  /** Told once, on the first failed attempt. */
  onOutage?: () => void;
}

/**
 * The one way events are written (STYLE: one command-handling path). `handle` is the generic
 * command handler: read the stream, fold it, decide, append at the revision read with metadata
 * built here, decide again on a version conflict (bounded), and return the new state with the
 * recorded events. `append` is its last step, used directly by the run driver, which keeps its
 * run's state folded in memory and so skips the read.
 */
export class CommandPath {
  constructor(
    readonly store: EventStore,
    /** The process writing, named in every event's metadata. */
    readonly processId: string,
    private readonly ids: Ids,
    private readonly clock: Clock,
  ) {}

  /** The metadata of every event appended for `ctx`. */
  metadata(ctx: CommandContext): EventMetadata {
    return {
      ...(ctx.runId !== undefined ? { runId: ctx.runId } : {}),
      ...(ctx.placedOn !== undefined ? { placedOn: ctx.placedOn } : {}),
      correlationId: ctx.correlationId,
      causationId: ctx.causationId ?? null,
      actor: ctx.actor,
      process: this.processId,
      schemaVersion: EVENT_SCHEMA_VERSION,
    };
  }

  /** Domain events as the store takes them: each with its id (the key of idempotent retries) and metadata. */
  toNewEvents(events: readonly DomainEvent[], ctx: CommandContext): NewEvent[] {
    const metadata = this.metadata(ctx);
    return events.map((e) => ({ id: this.ids.newId(), type: e.type, data: e.data, metadata }));
  }

  /**
   * Appends at `expectedRevision`. With `durable`, a store that does not answer is waited out:
   * the append is made again with the same event ids at the same expected revision, which the
   * store answers as the append already made if it was (the connection dropped after the commit),
   * so nothing is recorded twice.
   */
  async append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision, durable?: DurableAppendOptions): Promise<AppendResult> {
    const append = () => this.store.append(streamId, events, { expectedRevision });
    if (!durable) return append();
    // Stopped meanwhile: the last fault is rethrown; whether the append landed is unknown, and
    // whoever writes next folds the store.
    return untilStoreAnswers(append, {
      signal: durable.signal,
      onFault: (_, attempt) => {
        if (attempt === 1) durable.onOutage?.();
      },
    });
  }

  /** Read, fold, decide, append at the revision read; decide again on a concurrent append. */
  async handle<S extends { revision: number; position?: number }, E extends DomainEvent>(
    model: StreamModel<S, E>,
    decide: (state: S) => E[],
    ctx: CommandContext,
    options: CommandOptions = {},
  ): Promise<CommandResult<S, E>> {
    const maxAttempts = options.maxAttempts ?? 5;
    let fresh = options.assumeNew === true;
    for (let attempt = 1; ; attempt++) {
      const state = fresh ? model.initial() : await model.load();
      const decided = decide(state);
      if (decided.length === 0) return { state, events: [] };
      const newEvents = this.toNewEvents(decided, ctx);
      const expected: ExpectedRevision = fresh || state.revision < 0 ? 'no_stream' : state.revision;
      let result: AppendResult;
      try {
        result = await this.append(model.streamId, newEvents, expected);
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError) || attempt >= maxAttempts) throw err;
        fresh = false;
        continue;
      }
      const events = this.recorded(model.streamId, decided, newEvents, result);
      let next = state;
      for (const e of events) next = model.evolve(next, e);
      return { state: next, events };
    }
  }

  /**
   * The events of one append as the store recorded them, from the append's result (the last
   * event's revision and position: an append's events are consecutive in both). `recordedAt` is
   * when the writer learned of them, not the store's commit time.
   */
  recorded<E extends DomainEvent>(streamId: string, events: readonly E[], newEvents: readonly NewEvent[], result: AppendResult): Array<RecordedEvent<E['data']> & E> {
    const n = events.length;
    const recordedAt = new Date(this.clock.now()).toISOString();
    return events.map((e, i) => ({
      id: newEvents[i].id!,
      type: e.type,
      streamId,
      revision: result.nextExpectedRevision - n + 1 + i,
      position: result.position - n + 1 + i,
      data: e.data,
      metadata: newEvents[i].metadata as EventMetadata,
      recordedAt,
    })) as Array<RecordedEvent<E['data']> & E>;
  }
}

/** A command path for tools and tests that write outside a Nest app: the system clock, UUIDv7 ids. */
export function commandPathFor(store: EventStore, processId = `local:${process.pid}`): CommandPath {
  return new CommandPath(store, processId, uuidIds, systemClock);
}
