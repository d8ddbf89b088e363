import { decodeDeltas, encodeDeltas, LiveRelay, MAX_MESSAGE_BYTES, type LiveChannel, type LiveDelta } from '../../src/team/live-relay';
import { waitFor } from '../support/wait-for';

const delta = (text: string, turn = 1): LiveDelta => ({ runId: 'run_1', role: 'executor', turn, text });

/** Every relay on it hears every message, its own included, in the order sent (like NOTIFY). */
function sharedChannel() {
  const listeners: Array<(m: string) => void> = [];
  const sent: string[] = [];
  const open = (): LiveChannel => ({
    publish: async (m) => {
      sent.push(m);
      for (const l of listeners) l(m);
    },
    listen: async (l) => void listeners.push(l),
    close: async () => undefined,
  });
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
    const a = new LiveRelay(channel.open(), 'A', (d) => gotA.push(d));
    const b = new LiveRelay(channel.open(), 'B', (d) => gotB.push(d));
    await a.start();
    await b.start();
    const sent = Array.from({ length: 50 }, (_, i) => delta(`t${i} `, i));
    for (const d of sent) a.publish(d);
    await waitFor('every delta relayed', async () => gotB.length === sent.length, 10_000, 5);
    expect(gotB).toEqual(sent);
    expect(gotA).toEqual([]);
    // Batched while a send was in flight: fewer messages than deltas.
    expect(channel.sent.length).toBeLessThan(sent.length);
  });
});
