import type { AppendResult, EventMetadata, EventStore, RecordedEvent } from './event-store.port';

export interface DomainEvent {
  type: string;
  data: unknown;
}

/**
 * The one command-handling path: read the stream, fold it, decide, append the decided events at
 * the revision that was read. A concurrent writer makes the append fail with
 * WrongExpectedRevisionError; callers decide whether that is a conflict (409) or worth a retry.
 */
export async function handleCommand<S extends { revision: number }, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  fold: (events: RecordedEvent[]) => S,
  decide: (state: S) => E[],
  metadata: Partial<EventMetadata>,
): Promise<{ state: S; events: E[]; result?: AppendResult }> {
  const state = fold(await store.readStream(streamId));
  const events = decide(state);
  if (events.length === 0) return { state, events };
  const result = await store.append(
    streamId,
    events.map((e) => ({ type: e.type, data: e.data, metadata })),
    { expectedRevision: state.revision < 0 ? 'no_stream' : state.revision },
  );
  return { state, events, result };
}
