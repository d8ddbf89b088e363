import { CoalescedNotify } from '../../src/events/coalesced-notify';

/** A send that records each position and completes when the test says so (or at once). */
function recordingSend(options: { hold?: boolean; fail?: boolean } = {}) {
  const sent: number[] = [];
  const pending: Array<() => void> = [];
  const send = (position: number) => {
    sent.push(position);
    if (options.fail) return Promise.reject(new Error('connection terminated'));
    if (!options.hold) return Promise.resolve();
    return new Promise<void>((resolve) => pending.push(resolve));
  };
  return { sent, pending, send };
}

describe('CoalescedNotify: at most one notification per window', () => {
  afterEach(() => jest.useRealTimers());

  it('given a quiet window, when an append commits, then it is told at once', () => {
    jest.useFakeTimers();
    const wire = recordingSend();
    const notify = new CoalescedNotify(wire.send, 10);
    notify.appended(7);
    expect(wire.sent).toEqual([7]);
  });

  it('given a notification was just sent, when more appends commit within the window, then the highest is told once when it ends', () => {
    jest.useFakeTimers();
    const wire = recordingSend();
    const notify = new CoalescedNotify(wire.send, 10);
    notify.appended(1);
    notify.appended(2);
    notify.appended(5);
    notify.appended(4); // committed earlier, resolved later: covered by 5
    expect(wire.sent).toEqual([1]);
    jest.advanceTimersByTime(10);
    expect(wire.sent).toEqual([1, 5]);
  });

  it('given a trailing send, when appends keep coming, then each window sends once and a quiet one sends nothing', () => {
    jest.useFakeTimers();
    const wire = recordingSend();
    const notify = new CoalescedNotify(wire.send, 10);
    notify.appended(1);
    notify.appended(2);
    jest.advanceTimersByTime(10); // sends 2, opens a window
    notify.appended(3);
    jest.advanceTimersByTime(10); // sends 3, opens a window
    jest.advanceTimersByTime(10); // quiet: nothing
    expect(wire.sent).toEqual([1, 2, 3]);
    notify.appended(9); // after a quiet window: at once
    expect(wire.sent).toEqual([1, 2, 3, 9]);
  });

  it('given a position already told, when it is appended again, then nothing is sent', () => {
    jest.useFakeTimers();
    const wire = recordingSend();
    const notify = new CoalescedNotify(wire.send, 10);
    notify.appended(5);
    jest.advanceTimersByTime(10);
    notify.appended(5);
    notify.appended(3);
    expect(wire.sent).toEqual([5]);
  });

  it('given appends waiting for the window and a send in flight, when closing, then the pending one is sent and close waits for both', async () => {
    const wire = recordingSend({ hold: true });
    const notify = new CoalescedNotify(wire.send, 60_000);
    notify.appended(1);
    notify.appended(2);
    let closed = false;
    const closing = notify.close().then(() => (closed = true));
    expect(wire.sent).toEqual([1, 2]);
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    wire.pending.forEach((resolve) => resolve());
    await closing;
    notify.appended(3);
    expect(wire.sent).toEqual([1, 2]);
  });

  it('given a send the database never answers, when closing, then close gives up after its grace', async () => {
    const wire = recordingSend({ hold: true });
    const notify = new CoalescedNotify(wire.send, 10);
    notify.appended(1);
    await expect(notify.close(20)).resolves.toBeUndefined();
    expect(wire.sent).toEqual([1]);
  });

  it('given the database refuses a send, then the failure is reported and the next append is still told', async () => {
    const wire = recordingSend({ fail: true });
    const errors: unknown[] = [];
    const notify = new CoalescedNotify(wire.send, 60_000, (err) => errors.push(err));
    notify.appended(1);
    notify.appended(2);
    await notify.close();
    expect(wire.sent).toEqual([1, 2]);
    expect(errors).toHaveLength(2);
    expect(String(errors[0])).toMatch(/connection terminated/);
  });
});
