/**
 * An in-process EventStoreDB for tests, on @grpc/grpc-js with the service definitions the client
 * package ships. Hand-written because no EventStoreDB runs here (and the suites must not need
 * one): it implements, faithfully, the subset the client calls —
 * - ServerFeatures.GetSupportedMethods (the client asks at connect which methods exist);
 * - Streams.BatchAppend (what the client uses when the server offers it, as servers since 21.10
 *   do; one long-lived stream of requests, each answered by correlation id, its deadline
 *   honoured) and Streams.Append (the older path, `{ batchAppend: false }`), both with the
 *   expected revision rules (any, no_stream, stream_exists, exact);
 * - Streams.Read of a stream or of `$all`, forwards or backwards, from a revision / position /
 *   start / end, bounded by a count, and subscriptions (catch-up, then live, with stream-prefix
 *   and type filters).
 * Positions follow EventStoreDB's log: each event is a record at a byte offset (its prepare
 * position) and the events of one append share the commit position where the append began, so
 * an adapter's mapping of positions is tested against the same shape a real server gives.
 * The log starts with a few system events (`$`-streams) and can hold other applications' events.
 * Deadlines are the client's and grpc-js's: a call past its deadline is cancelled and the server
 * stops sending.
 */
import * as grpc from '@grpc/grpc-js';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import { Empty, StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { Status } from '@eventstore/db-client/generated/status_pb';
import { AllStreamPosition, WrongExpectedVersion } from '@eventstore/db-client/generated/shared_pb';
import { AppendReq, AppendResp, BatchAppendReq, BatchAppendResp, ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { Any } from 'google-protobuf/google/protobuf/any_pb';

interface LogRecord {
  stream: string;
  revision: bigint;
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  customMetadata: Uint8Array;
  created: bigint;
  commit: bigint;
  prepare: bigint;
}

export interface FakeEsdbServer {
  /** `esdb://127.0.0.1:<port>?tls=false` */
  url: string;
  port: number;
  /** Every record of the log, system events included. */
  readonly log: readonly LogRecord[];
  /** Writes an event to a stream outside triad (another application), with no checks. */
  foreign(stream: string, type: string): void;
  /** Appends, read calls and the like seen so far (for tests on what the client asked). */
  readonly calls: Map<string, number>;
  stop(): Promise<void>;
}

const RECORD_OVERHEAD = 80n;
const TICKS_PER_MS = 10_000n;

type Expected = { kind: 'any' | 'no_stream' | 'stream_exists' } | { kind: 'exact'; revision: bigint };
type Proposed = Omit<LogRecord, 'stream' | 'revision' | 'commit' | 'prepare' | 'created'>;
type AppendOutcome = { ok: true; last: LogRecord | undefined; current: bigint | null } | { ok: false; current: bigint | null };

export interface FakeEsdbOptions {
  port?: number;
  /** false: a server before 21.10, without BatchAppend. */
  batchAppend?: boolean;
  /** Reads are accepted and never answered (a server that hangs), until their deadline or cancel. */
  stallReads?: boolean;
}

export async function startFakeEsdb(options: FakeEsdbOptions = {}): Promise<FakeEsdbServer> {
  const settings = options;
  const log: LogRecord[] = [];
  const streams = new Map<string, LogRecord[]>();
  const listeners = new Set<() => void>();
  const calls = new Map<string, number>();
  let nextPosition = 0n;
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);

  const write = (stream: string, events: Array<Omit<LogRecord, 'stream' | 'revision' | 'commit' | 'prepare' | 'created'>>): LogRecord[] => {
    const list = streams.get(stream) ?? [];
    const commit = nextPosition;
    const created = BigInt(Date.now()) * TICKS_PER_MS;
    const written = events.map((e) => {
      const record: LogRecord = { ...e, stream, revision: BigInt(list.length), commit, prepare: nextPosition, created };
      nextPosition += RECORD_OVERHEAD + BigInt(stream.length + e.type.length + e.data.length + e.customMetadata.length);
      list.push(record);
      log.push(record);
      return record;
    });
    streams.set(stream, list);
    for (const wake of [...listeners]) wake();
    return written;
  };
  /** The expected revision rule, then the write: one step, as the server's single writer does. */
  const appendTo = (stream: string, expected: Expected, events: Proposed[]): AppendOutcome => {
    const list = streams.get(stream) ?? [];
    const current = list.length === 0 ? null : BigInt(list.length - 1);
    const ok =
      expected.kind === 'any' ||
      (expected.kind === 'no_stream' && current === null) ||
      (expected.kind === 'stream_exists' && current !== null) ||
      (expected.kind === 'exact' && current !== null && expected.revision === current);
    if (!ok) return { ok: false, current };
    if (events.length === 0) return { ok: true, last: undefined, current };
    const written = write(stream, events);
    const last = written[written.length - 1];
    return { ok: true, last, current: last.revision };
  };
  const proposedOf = (m: AppendReq.ProposedMessage | BatchAppendReq.ProposedMessage): Proposed => {
    const meta = m.getMetadataMap();
    return {
      id: uuidOf(m.getId()),
      type: meta.get('type') ?? '',
      contentType: meta.get('content-type') ?? 'application/octet-stream',
      data: m.getData_asU8(),
      customMetadata: m.getCustomMetadata_asU8(),
    };
  };
  const system = (stream: string, type: string) =>
    write(stream, [{ id: crypto.randomUUID(), type, contentType: 'application/json', data: Buffer.from('{}'), customMetadata: new Uint8Array() }]);
  system('$epoch-information', '$epoch-information');
  system('$scavenges', '$scavengeStarted');

  const server = new grpc.Server();
  server.addService(ServerFeaturesService, {
    getSupportedMethods: (_call: grpc.ServerUnaryCall<Empty, SupportedMethods>, callback: grpc.sendUnaryData<SupportedMethods>) => {
      count('getSupportedMethods');
      const methods = ['read', 'append', ...(options.batchAppend === false ? [] : ['batchappend'])].map((m) => new SupportedMethod().setServiceName('event_store.client.streams.streams').setMethodName(m));
      callback(null, new SupportedMethods().setEventStoreServerVersion('24.10.0').setMethodsList(methods));
    },
  });

  server.addService(StreamsService, {
    append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>) => {
      count('append');
      let options: AppendReq.Options | undefined;
      const proposed: AppendReq.ProposedMessage[] = [];
      call.on('data', (req: AppendReq) => {
        if (req.hasOptions()) options = req.getOptions();
        else if (req.hasProposedMessage()) proposed.push(req.getProposedMessage()!);
      });
      call.on('error', () => undefined);
      call.on('end', () => {
        if (call.cancelled) return;
        if (!options) return callback({ code: grpc.status.INVALID_ARGUMENT, details: 'append without options' });
        const stream = streamName(options.getStreamIdentifier());
        const expected: Expected = options.hasRevision()
          ? { kind: 'exact', revision: BigInt(options.getRevision()) }
          : { kind: options.hasNoStream() ? 'no_stream' : options.hasStreamExists() ? 'stream_exists' : 'any' };
        const outcome = appendTo(stream, expected, proposed.map(proposedOf));
        if (!outcome.ok) {
          const wrong = new AppendResp.WrongExpectedVersion();
          if (outcome.current === null) wrong.setCurrentNoStream(new Empty());
          else wrong.setCurrentRevision(outcome.current.toString());
          if (expected.kind === 'exact') wrong.setExpectedRevision(expected.revision.toString());
          else if (expected.kind === 'no_stream') wrong.setExpectedNoStream(new Empty());
          else if (expected.kind === 'stream_exists') wrong.setExpectedStreamExists(new Empty());
          else wrong.setExpectedAny(new Empty());
          return callback(null, new AppendResp().setWrongExpectedVersion(wrong));
        }
        const success = new AppendResp.Success();
        if (outcome.current === null) success.setNoStream(new Empty());
        else success.setCurrentRevision(outcome.current.toString());
        if (outcome.last) success.setPosition(new AppendResp.Position().setCommitPosition(outcome.last.commit.toString()).setPreparePosition(outcome.last.prepare.toString()));
        else success.setNoPosition(new Empty());
        callback(null, new AppendResp().setSuccess(success));
      });
    },

    batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => {
      count('batchAppend');
      const pending = new Map<string, { options?: BatchAppendReq.Options; messages: BatchAppendReq.ProposedMessage[] }>();
      call.on('data', (req: BatchAppendReq) => {
        const correlation = uuidOf(req.getCorrelationId());
        const batch = pending.get(correlation) ?? { messages: [] };
        pending.set(correlation, batch);
        if (req.hasOptions()) batch.options = req.getOptions();
        batch.messages.push(...req.getProposedMessagesList());
        if (!req.getIsFinal()) return;
        pending.delete(correlation);
        const o = batch.options!;
        const stream = streamName(o.getStreamIdentifier());
        const resp = new BatchAppendResp()
          .setCorrelationId(new UUID().setString(correlation))
          .setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(stream)));
        const deadline = o.getDeadline()?.toDate().getTime();
        if (deadline !== undefined && deadline < Date.now()) {
          return call.write(resp.setError(errorStatus(grpc.status.DEADLINE_EXCEEDED, 'event_store.client.Timeout', new Empty().serializeBinary())));
        }
        const expected: Expected = o.hasStreamPosition()
          ? { kind: 'exact', revision: BigInt(o.getStreamPosition()) }
          : { kind: o.hasNoStream() ? 'no_stream' : o.hasStreamExists() ? 'stream_exists' : 'any' };
        const outcome = appendTo(stream, expected, batch.messages.map(proposedOf));
        if (!outcome.ok) {
          const wrong = new WrongExpectedVersion();
          if (outcome.current === null) wrong.setCurrentNoStream(new Empty());
          else wrong.setCurrentStreamRevision(outcome.current.toString());
          if (expected.kind === 'exact') wrong.setExpectedStreamPosition(expected.revision.toString());
          else if (expected.kind === 'no_stream') wrong.setExpectedNoStream(new Empty());
          else if (expected.kind === 'stream_exists') wrong.setExpectedStreamExists(new Empty());
          else wrong.setExpectedAny(new Empty());
          return call.write(resp.setError(errorStatus(grpc.status.FAILED_PRECONDITION, 'event_store.client.WrongExpectedVersion', wrong.serializeBinary())));
        }
        const success = new BatchAppendResp.Success();
        if (outcome.current === null) success.setNoStream(new Empty());
        else success.setCurrentRevision(outcome.current.toString());
        if (outcome.last) success.setPosition(new AllStreamPosition().setCommitPosition(outcome.last.commit.toString()).setPreparePosition(outcome.last.prepare.toString()));
        call.write(resp.setSuccess(success));
      });
      call.on('error', () => undefined);
      call.on('end', () => call.end());
    },

    read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => {
      count('read');
      if (settings.stallReads) return;
      const options = call.request.getOptions();
      if (!options) return call.destroy(Object.assign(new Error('read without options'), { code: grpc.status.INVALID_ARGUMENT }));
      const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
      const filter = options.hasFilter() ? options.getFilter()! : undefined;
      const matches = (r: LogRecord) => {
        if (!filter) return true;
        if (filter.hasStreamIdentifier()) return matchesExpression(r.stream, filter.getStreamIdentifier()!);
        if (filter.hasEventType()) return matchesExpression(r.type, filter.getEventType()!);
        return true;
      };
      const send = (r: LogRecord): boolean => {
        if (call.cancelled || call.destroyed) return false;
        call.write(new ReadResp().setEvent(readEvent(r)));
        return true;
      };

      if (options.hasStream()) {
        const s = options.getStream()!;
        const stream = streamName(s.getStreamIdentifier());
        const list = streams.get(stream);
        if (options.hasSubscription()) return subscribeStream(call, stream, s, send, streams, listeners);
        if (!list || list.length === 0) {
          const notFound = new ReadResp.StreamNotFound().setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(stream)));
          call.write(new ReadResp().setStreamNotFound(notFound));
          return call.end();
        }
        let max = Number(options.getCount());
        const last = list.length - 1;
        let at = s.hasStart() ? (backwards ? -1 : 0) : s.hasEnd() ? (backwards ? last : list.length) : Number(s.getRevision());
        if (backwards) at = Math.min(at, last);
        while (max > 0 && at >= 0 && at < list.length) {
          if (!send(list[at])) return;
          max--;
          at += backwards ? -1 : 1;
        }
        return call.end();
      }

      const all = options.getAll()!;
      const from = all.hasStart() ? 'start' : all.hasEnd() ? 'end' : { commit: BigInt(all.getPosition()!.getCommitPosition()), prepare: BigInt(all.getPosition()!.getPreparePosition()) };
      if (options.hasSubscription()) {
        call.write(new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId(crypto.randomUUID())));
        let index = from === 'start' ? 0 : from === 'end' ? log.length : firstAtOrAfter(log, from);
        const pump = () => {
          while (index < log.length) {
            const r = log[index++];
            if (matches(r) && !send(r)) return stop();
          }
        };
        const stop = () => {
          listeners.delete(pump);
        };
        listeners.add(pump);
        call.on('cancelled', stop);
        call.on('close', stop);
        return pump();
      }
      let max = Number(options.getCount());
      if (backwards) {
        // Backwards from a position: the events before it.
        let i = from === 'end' ? log.length - 1 : from === 'start' ? -1 : firstAtOrAfter(log, from) - 1;
        for (; i >= 0 && max > 0; i--) {
          if (!matches(log[i])) continue;
          if (!send(log[i])) return;
          max--;
        }
        return call.end();
      }
      for (let i = from === 'start' ? 0 : from === 'end' ? log.length : firstAtOrAfter(log, from); i < log.length && max > 0; i++) {
        if (!matches(log[i])) continue;
        if (!send(log[i])) return;
        max--;
      }
      call.end();
    },
  });

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    url: `esdb://127.0.0.1:${port}?tls=false`,
    port,
    log,
    calls,
    foreign: (stream, type) => void system(stream, type),
    stop: () =>
      new Promise<void>((resolve) => {
        listeners.clear();
        server.tryShutdown(() => resolve());
        // A client that keeps a call open (a subscription) must not hold the shutdown.
        setTimeout(() => server.forceShutdown(), 200).unref();
      }),
  };
}

/** Index of the first record at or after a position (records are in (commit, prepare) order). */
function firstAtOrAfter(log: LogRecord[], p: { commit: bigint; prepare: bigint }): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const r = log[mid];
    const less = r.commit < p.commit || (r.commit === p.commit && r.prepare < p.prepare);
    if (less) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function subscribeStream(
  call: grpc.ServerWritableStream<ReadReq, ReadResp>,
  stream: string,
  s: ReadReq.Options.StreamOptions,
  send: (r: LogRecord) => boolean,
  streams: Map<string, LogRecord[]>,
  listeners: Set<() => void>,
): void {
  call.write(new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId(crypto.randomUUID())));
  const initial = streams.get(stream)?.length ?? 0;
  let next = s.hasStart() ? 0 : s.hasEnd() ? initial : Number(s.getRevision()) + 1;
  const pump = () => {
    const list = streams.get(stream) ?? [];
    while (next < list.length) if (!send(list[next++])) return listeners.delete(pump);
  };
  listeners.add(pump);
  call.on('cancelled', () => listeners.delete(pump));
  pump();
}

function matchesExpression(value: string, expression: ReadReq.Options.FilterOptions.Expression): boolean {
  const prefixes = expression.getPrefixList();
  if (prefixes.length > 0) return prefixes.some((p) => value.startsWith(p));
  const regex = expression.getRegex();
  return regex ? new RegExp(regex).test(value) : true;
}

function errorStatus(code: number, typeName: string, detail: Uint8Array): Status {
  const any = new Any();
  any.pack(detail, typeName);
  return new Status().setCode(code).setMessage(typeName).setDetails(any);
}

function streamName(identifier: StreamIdentifier | undefined): string {
  return Buffer.from(identifier?.getStreamName_asU8() ?? new Uint8Array()).toString('utf8');
}

function uuidOf(uuid: UUID | undefined): string {
  if (!uuid) return crypto.randomUUID();
  if (uuid.hasString()) return uuid.getString();
  const s = uuid.getStructured()!;
  const b = Buffer.alloc(16);
  b.writeBigInt64BE(BigInt(s.getMostSignificantBits()), 0);
  b.writeBigInt64BE(BigInt(s.getLeastSignificantBits()), 8);
  const x = b.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function readEvent(r: LogRecord): ReadResp.ReadEvent {
  const recorded = new ReadResp.ReadEvent.RecordedEvent()
    .setId(new UUID().setString(r.id))
    .setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(r.stream)))
    .setStreamRevision(r.revision.toString())
    .setPreparePosition(r.prepare.toString())
    .setCommitPosition(r.commit.toString())
    .setCustomMetadata(r.customMetadata)
    .setData(r.data);
  const meta = recorded.getMetadataMap();
  meta.set('type', r.type);
  meta.set('content-type', r.contentType);
  meta.set('created', r.created.toString());
  return new ReadResp.ReadEvent().setEvent(recorded).setCommitPosition(r.commit.toString());
}
