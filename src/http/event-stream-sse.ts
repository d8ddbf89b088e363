import type { Request, Response } from 'express';
import type { EventStore, RecordedEvent } from '../events/event-store/event-store.port';
import type { TriadMetrics } from '../observability/metrics';

/** What one stream's Server-Sent Events need besides the request. */
export interface StreamSse {
  store: EventStore;
  metrics: TriadMetrics;
  stream: string;
  /** The first revision to send (`fromRevision`, or one past `Last-Event-ID`). */
  from: number;
  /** The event after which the stream has nothing more to say: the response ends there. */
  isEnd: (event: RecordedEvent) => boolean;
  /** Extra live messages, not stored (a run's model text); answers how to stop them. */
  live?: (send: (message: SseMessage) => void) => () => void;
}

/** One Server-Sent Event: `id` only for what is stored, so that a reconnect resumes after it. */
export interface SseMessage {
  id?: number;
  event: string;
  data: unknown;
}

/** The one framing of every message sent on an event stream. */
export function sseFrame(message: SseMessage): string {
  const id = message.id === undefined ? '' : `id: ${message.id}\n`;
  return `${id}event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`;
}

/** A heartbeat comment keeps proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;
const PAGE = 1000;

/**
 * A run's or a project's events as SSE: the recorded events from `from`, then live ones from the
 * store's subscription, until the stream's end event or the client goes away. Each event's `id` is
 * its revision, so an EventSource reconnecting with `Last-Event-ID` resumes exactly after it.
 */
export async function streamEventsAsSse(sse: StreamSse, req: Request, res: Response): Promise<void> {
  const { store, stream, from, isEnd } = sse;
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache');
  // Connection is Node's to set: keep-alive, or close when the client asked for it.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const closed = sse.metrics.sseOpened();
  const controller = new AbortController();
  req.on('close', () => controller.abort());
  const write = (chunk: string) => res.write(chunk);
  const heartbeat = setInterval(() => write(': keep-alive\n\n'), HEARTBEAT_MS);
  const stopLive = sse.live?.((message) => write(sseFrame(message)));
  const send = (e: RecordedEvent) => write(sseFrame({ id: e.revision, event: e.type, data: e }));
  try {
    // From the event before `from`: where to subscribe, and whether the stream has already ended.
    let last: RecordedEvent | undefined;
    for (let next = Math.max(0, from - 1); ; ) {
      const page = await store.readStream(stream, { fromRevision: next, maxCount: PAGE });
      for (const e of page) {
        last = e;
        if (e.revision >= from) send(e);
      }
      if (page.length < PAGE) break;
      next = page[page.length - 1].revision + 1;
    }
    if (last === undefined && from > 0) {
      // Resumed past the head (a Last-Event-ID beyond it): the head says where the stream stands.
      const head = await store.streamRevision(stream);
      if (head !== null) [last] = await store.readStream(stream, { fromRevision: head, maxCount: 1 });
    }
    if (last === undefined || !isEnd(last)) {
      const sub = store.subscribe({ after: last?.position ?? 0, filter: { streamPrefixes: [stream] }, signal: controller.signal, urgent: true });
      for await (const e of sub) {
        if (e.streamId !== stream) continue;
        // Before `from` (a client resuming past the head): not sent, but its end still ends the response.
        if (e.revision >= from) send(e);
        if (isEnd(e)) break;
      }
    }
  } finally {
    clearInterval(heartbeat);
    stopLive?.();
    closed();
    res.end();
  }
}

/** Whether the client asked for Server-Sent Events rather than a JSON page. */
export function wantsSse(req: Request): boolean {
  return (req.headers.accept ?? '').includes('text/event-stream');
}

/** Where an SSE stream starts: one past a reconnecting client's `Last-Event-ID`, else `from`. */
export function sseStart(req: Request, from: number, parseRevision: (name: string, raw: string) => number): number {
  const lastEventId = req.headers['last-event-id'];
  return typeof lastEventId === 'string' && lastEventId !== '' ? parseRevision('Last-Event-ID', lastEventId) + 1 : from;
}
