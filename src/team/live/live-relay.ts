import type { RoleName } from '../models/model.port';
import { MAX_MESSAGE_BYTES, type LiveChannel, type LiveMessage } from '../../events/live-channel/live-channel.port';

/**
 * Live model text between processes: a driver's streamed text is never stored, so an SSE client
 * on another process than the run's driver gets it through a relay (PostgreSQL: NOTIFY on a
 * channel per run, listened to by the processes watching that run). Only for display: a message
 * lost (a dropped connection, a full queue) loses some text on screen, never an event.
 */

/** One piece of streamed text of a run. */
export interface LiveDelta {
  runId: string;
  role: RoleName;
  turn: number;
  text: string;
}

/** Text per piece: even escaped at 6 bytes a character (`\u0001`) it fits a message. */
const MAX_PIECE_CHARS = 1000;

interface Wire {
  /** The process that published it (its own messages come back to it, and are skipped). */
  from: string;
  deltas: Array<[runId: string, role: RoleName, turn: number, text: string]>;
}

/** Splits long text at most MAX_PIECE_CHARS a piece, never between the halves of a surrogate pair. */
function pieces(d: LiveDelta): LiveDelta[] {
  if (d.text.length <= MAX_PIECE_CHARS) return [d];
  const out: LiveDelta[] = [];
  for (let i = 0; i < d.text.length; ) {
    let end = Math.min(d.text.length, i + MAX_PIECE_CHARS);
    const code = d.text.charCodeAt(end - 1);
    if (end < d.text.length && code >= 0xd800 && code <= 0xdbff) end--;
    out.push({ ...d, text: d.text.slice(i, end) });
    i = end;
  }
  return out;
}

/** Deltas in as few messages as fit (each at most MAX_MESSAGE_BYTES), in order. */
export function encodeDeltas(from: string, deltas: readonly LiveDelta[]): string[] {
  const messages: string[] = [];
  let batch: Wire['deltas'] = [];
  let bytes = 0;
  const overhead = Buffer.byteLength(JSON.stringify({ from, deltas: [] }));
  const flush = () => {
    if (batch.length > 0) messages.push(JSON.stringify({ from, deltas: batch } satisfies Wire));
    batch = [];
    bytes = overhead;
  };
  flush();
  for (const d of deltas.flatMap(pieces)) {
    const entry: Wire['deltas'][number] = [d.runId, d.role, d.turn, d.text];
    const size = Buffer.byteLength(JSON.stringify(entry)) + 1;
    if (bytes + size > MAX_MESSAGE_BYTES) flush();
    batch.push(entry);
    bytes += size;
  }
  flush();
  return messages;
}

/** The deltas of a message another process published; none for this process's own or a malformed one. */
export function decodeDeltas(self: string, message: string): LiveDelta[] {
  let wire: Wire;
  try {
    wire = JSON.parse(message) as Wire;
  } catch {
    return [];
  }
  if (!wire || wire.from === self || !Array.isArray(wire.deltas)) return [];
  const out: LiveDelta[] = [];
  for (const e of wire.deltas) {
    if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'string' || typeof e[2] !== 'number' || typeof e[3] !== 'string') continue;
    out.push({ runId: e[0], role: e[1], turn: e[2], text: e[3] });
  }
  return out;
}

/** Deltas waiting to be published, at most this many (a slow channel drops the oldest: display only). */
const MAX_PENDING = 10_000;

/** Deltas as messages per run, in order within each run: what one publish sends. */
export function encodeByRun(from: string, deltas: readonly LiveDelta[]): LiveMessage[] {
  const byRun = new Map<string, LiveDelta[]>();
  for (const d of deltas) {
    const run = byRun.get(d.runId);
    if (run) run.push(d);
    else byRun.set(d.runId, [d]);
  }
  return [...byRun].flatMap(([runId, run]) => encodeDeltas(from, run).map((message) => ({ runId, message })));
}

/**
 * Publishes this process's deltas through a channel: queued, sent one batch at a time (so in
 * order), batched while a send is in flight. Text from other processes of the runs watched here
 * (`watch`) goes to `onRemote`.
 */
export class LiveRelay {
  private pending: LiveDelta[] = [];
  private sending = false;
  private closed = false;
  private dropped = 0;
  /** Watchers per run: the channel watches a run while it has one. */
  private readonly watchers = new Map<string, number>();

  constructor(
    private readonly channel: LiveChannel,
    private readonly self: string,
    private readonly onRemote: (delta: LiveDelta) => void,
    private readonly logger?: { warn(message: string): void },
  ) {}

  start(): Promise<void> {
    return this.channel.listen((message) => {
      // A channel may carry runs not watched here (EventStoreDB's carries every run's), or a run's
      // text sent just before it stopped being watched.
      for (const d of decodeDeltas(this.self, message)) if (this.watchers.has(d.runId)) this.onRemote(d);
    });
  }

  publish(delta: LiveDelta): void {
    if (this.closed) return;
    this.pending.push(delta);
    if (this.pending.length > MAX_PENDING) {
      this.pending.shift();
      if (this.dropped++ === 0) this.logger?.warn('live text relay is behind: dropping the oldest text (display only)');
    }
    // Never rejects: text that cannot be sent is logged and dropped (display only).
    if (!this.sending) void this.drain();
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.pending.length > 0 && !this.closed) {
        const batch = this.pending;
        this.pending = [];
        try {
          await this.channel.publish(encodeByRun(this.self, batch));
        } catch (err) {
          this.logger?.warn(`live text relay: some text was not sent (${(err as Error).message})`);
        }
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * Receives the run's text from other processes until the returned function is called (once per
   * watcher: an SSE client, the CLI following a run).
   */
  watch(runId: string): () => void {
    const n = this.watchers.get(runId) ?? 0;
    this.watchers.set(runId, n + 1);
    // A failure is a lost connection: the channel listens again, to every run watched, once it is back.
    if (n === 0) this.channel.watch(runId).catch(() => undefined);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.watchers.get(runId)! - 1;
      if (left > 0) return void this.watchers.set(runId, left);
      this.watchers.delete(runId);
      // A failure is a lost connection: the other processes' record of this watch lapses by itself (watches are renewed, not kept).
      this.channel.unwatch(runId).catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.channel.close();
  }
}
