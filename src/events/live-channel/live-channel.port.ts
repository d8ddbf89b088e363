/**
 * The port live model text crosses processes through (see src/team/live/live-relay.ts): the
 * relay encodes and batches, a channel only carries its messages between the processes sharing a
 * store. Adapters beside it: PostgreSQL (NOTIFY) and EventStoreDB.
 */

/** One encoded message, with the run it carries text of. */
export interface LiveMessage {
  runId: string;
  message: string;
}

/** Carries messages between the processes sharing a store. */
export interface LiveChannel {
  /**
   * Sends messages to the processes watching their runs; in order per run, at most once. A channel
   * may deliver more (every run's, to every process), or send nothing of a run that no other
   * process watches (this one's watchers get its text without the channel).
   */
  publish(messages: readonly LiveMessage[]): Promise<void>;
  /** Starts handing the messages of the runs watched here (published by any process) to `onMessage`. */
  listen(onMessage: (message: string) => void): Promise<void>;
  /** Receives a run's messages from now on; resolves once they are (or, not connected now, will be once it is). */
  watch(runId: string): Promise<void>;
  /** No longer receives a run's messages. */
  unwatch(runId: string): Promise<void>;
  close(): Promise<void>;
}

/** Largest message any channel carries (the relay encodes to fit): PostgreSQL's NOTIFY payload is under 8000 bytes. */
export const MAX_MESSAGE_BYTES = 7500;
