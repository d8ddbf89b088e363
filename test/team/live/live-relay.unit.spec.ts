import { MAX_MESSAGE_BYTES, type LiveChannel, type LiveMessage } from '../../../src/events/live-channel/live-channel.port';
import { decodeDeltas, encodeByRun, encodeDeltas, LiveRelay, type LiveDelta } from '../../../src/team/live/live-relay';
import { waitFor } from '../../support/wait-for';

const delta = (text: string, turn = 1): LiveDelta => ({ runId: 'run_1', role: 'executor', turn, text });

/** Every relay on it hears every message of the runs it watches, its own included, in the order sent (like NOTIFY). */
function sharedChannel() {
  const listeners: Array<{ watched: Set<string>; onMessage?: (m: string) => void }> = [];
  const sent: LiveMessage[] = [];
  const open = () => {
    const me: (typeof listeners)[number] = { watched: new Set() };
    listeners.push(me);
    const channel: LiveChannel = {
      publish: async (messages) => {
        sent.push(...messages);
        for (const m of messages) for (const l of listeners) if (l.watched.has(m.runId)) l.onMessage?.(m.message);
      },
      listen: async (onMessage) => void (me.onMessage = onMessage),
      watch: async (runId) => void me.watched.add(runId),
      unwatch: async (runId) => void me.watched.delete(runId),
      close: async () => undefined,
    };
    return { channel, watched: me.watched };
  };
  return { open, sent };
}

describe('live text relay', () => {
  it('given deltas of one process, when another decodes them, then it gets them in order; the sender skips its own', () => {
    const messages = encodeDeltas('A', [delta('Hel'), delta('lo', 2)]);
    expect(messages).toHaveLength(1);
    expect(decodeDeltas('B', messages[0])).toEqual([delta('Hel'), delta('lo', 2)]);
    expect(decodeDeltas('A', messages[0])).toEqual([]);
  });

  it('given text longer than a message, then it is split in pieces that fit, never inside a surrogate pair, and joined back whole', () => {
    const text = ('😀'.repeat(700) + '\u0001'.repeat(1500) + 'é'.repeat(3000)).slice(1);
    const messages = encodeDeltas('A', [delta(text)]);
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(Buffer.byteLength(m)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    const back = messages.flatMap((m) => decodeDeltas('B', m));
    expect(back.map((d) => d.text).join('')).toBe(text);
  });

  it('given a malformed message, then it yields nothing', () => {
    expect(decodeDeltas('B', 'not json')).toEqual([]);
    expect(decodeDeltas('B', JSON.stringify({ from: 'A', deltas: [[1, 2, 3, 4]] }))).toEqual([]);
  });

  it('given two relays on one channel, when one publishes, then the other receives every delta in order and the first none of its own', async () => {
    const channel = sharedChannel();
    const gotA: LiveDelta[] = [];
    const gotB: LiveDelta[] = [];
    const a = new LiveRelay(channel.open().channel, 'A', (d) => gotA.push(d));
    const b = new LiveRelay(channel.open().channel, 'B', (d) => gotB.push(d));
    await a.start();
    await b.start();
    a.watch('run_1');
    b.watch('run_1');
    const sent = Array.from({ length: 50 }, (_, i) => delta(`t${i} `, i));
    for (const d of sent) a.publish(d);
    await waitFor('every delta relayed', async () => gotB.length === sent.length, 10_000, 5);
    expect(gotB).toEqual(sent);
    expect(gotA).toEqual([]);
    // Batched while a send was in flight: fewer messages than deltas.
    expect(channel.sent.length).toBeLessThan(sent.length);
  });

  it('given deltas of several runs, when encoded for sending, then each message carries one run, in order within each run', () => {
    const other = (text: string): LiveDelta => ({ runId: 'run_2', role: 'architect', turn: 1, text });
    const messages = encodeByRun('A', [delta('a'), other('x'), delta('b'), other('y')]);
    expect(messages.map((m) => m.runId)).toEqual(['run_1', 'run_2']);
    expect(decodeDeltas('B', messages[0].message)).toEqual([delta('a'), delta('b')]);
    expect(decodeDeltas('B', messages[1].message)).toEqual([other('x'), other('y')]);
  });
});

describe('watching runs', () => {
  it('given watchers of a run, then the channel watches that run while one is left, and no other run', () => {
    const { channel, watched } = sharedChannel().open();
    const relay = new LiveRelay(channel, 'A', () => undefined);
    const first = relay.watch('run_1');
    const second = relay.watch('run_1');
    expect([...watched]).toEqual(['run_1']);
    first();
    first();
    expect([...watched]).toEqual(['run_1']);
    second();
    expect([...watched]).toEqual([]);
  });

  it('given a channel carrying every run, when another process publishes two runs, then only the watched run reaches onRemote', async () => {
    const shared = sharedChannel();
    const a = new LiveRelay(shared.open().channel, 'A', () => undefined);
    const got: LiveDelta[] = [];
    const { channel, watched } = shared.open();
    // Carries every run to this relay, watched or not (as EventStoreDB's stream does).
    watched.add('run_1').add('run_2');
    const b = new LiveRelay({ ...channel, watch: async () => undefined, unwatch: async () => undefined }, 'B', (d) => got.push(d));
    await b.start();
    b.watch('run_2');
    const other: LiveDelta = { runId: 'run_2', role: 'architect', turn: 1, text: 'kept' };
    a.publish(delta('dropped'));
    a.publish(other);
    await waitFor('the watched run', async () => got.length > 0, 10_000, 5);
    expect(got).toEqual([other]);
  });
});
