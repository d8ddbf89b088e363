import { classifyStoreError, EventIdConflictError, isStoreUnavailable, StoreUnavailableError, WrongExpectedRevisionError } from '../../src/events/errors';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import type { ReadAllOptions, RecordedEvent } from '../../src/events/event-store/event-store.port';
import { OutageBackoff, storeBackoffMs, STORE_RETRY_MAX_MS } from '../../src/events/store-retry';
import { HealthRegistry } from '../../src/shared/health';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('store errors are classified once', () => {
  it.each([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a reset connection', withCode('read ECONNRESET', 'ECONNRESET')],
    ['an administrator shutdown', withCode('terminating connection due to administrator command', '57P01')],
    ['a connection exception', withCode('connection failure', '08006')],
    ['a lost connection', new Error('Connection terminated unexpectedly')],
    ['a pool that cannot connect in time', new Error('timeout exceeded when trying to connect')],
    ['a query unanswered in time', new Error('Query read timeout')],
    ['a busy SQLite file', withCode('database is locked', 'SQLITE_BUSY')],
    ['a damaged SQLite file', withCode('database disk image is malformed', 'SQLITE_CORRUPT')],
    ['a SQLite file that is not a database', withCode('file is not a database', 'SQLITE_NOTADB')],
    ['a SQLite write the disk refused', withCode('disk I/O error', 'SQLITE_IOERR_WRITE')],
    ['a full disk under SQLite', withCode('database or disk is full', 'SQLITE_FULL')],
    ['a SQLite file made read-only', withCode('attempt to write a readonly database', 'SQLITE_READONLY')],
    ['a wrapped cause', new Error('Connection terminated due to connection timeout', { cause: withCode('x', 'ETIMEDOUT') })],
  ])('%s is the store being unavailable', (_, err) => {
    expect(isStoreUnavailable(err)).toBe(true);
    const classified = classifyStoreError(err);
    expect(classified).toBeInstanceOf(StoreUnavailableError);
    // The client-facing message is generic; the driver's message is kept for logs.
    expect((classified as StoreUnavailableError).message).toBe('the event store is not reachable');
    expect((classified as StoreUnavailableError).detail).toContain((err as Error).message);
  });

  it.each([
    ['a conflict', new WrongExpectedRevisionError('run-x', 3, 4)],
    ['an event id reused', new EventIdConflictError('e1', 'stored with different content')],
    ['a unique violation', withCode('duplicate key value', '23505')],
    ['a syntax error', withCode('syntax error', '42601')],
    ['a constraint failure in SQLite', withCode('UNIQUE constraint failed', 'SQLITE_CONSTRAINT_UNIQUE')],
  ])('%s is a logical error and keeps its type', (_, err) => {
    expect(isStoreUnavailable(err)).toBe(false);
    expect(classifyStoreError(err)).toBe(err);
  });
});

describe('backoff', () => {
  it('grows with the attempts, with jitter, and never exceeds its bound', () => {
    expect(storeBackoffMs(1, () => 0)).toBe(50);
    expect(storeBackoffMs(1, () => 1)).toBe(100);
    expect(storeBackoffMs(4, () => 1)).toBe(800);
    expect(storeBackoffMs(50, () => 1)).toBe(STORE_RETRY_MAX_MS);
    const spread = new Set(Array.from({ length: 20 }, () => storeBackoffMs(6)));
    expect(spread.size).toBeGreaterThan(1);
  });

  it('periodic work pauses after a failure and says when an outage starts and ends', () => {
    let now = 0;
    const outage = new OutageBackoff(() => now);
    expect(outage.waiting).toBe(false);
    expect(outage.failed()).toBe(true);
    expect(outage.waiting).toBe(true);
    expect(outage.failed()).toBe(false);
    now += STORE_RETRY_MAX_MS + 1;
    expect(outage.waiting).toBe(false);
    expect(outage.succeeded()).toBe(true);
    expect(outage.succeeded()).toBe(false);
  });
});

describe('health registry', () => {
  it('given a store fault, then an answer: degraded, then ok', () => {
    const h = new HealthRegistry();
    expect(h.assess()).toEqual({ ok: true, reasons: [] });
    h.storeFailed('read ECONNRESET');
    expect(h.assess()).toEqual({ ok: false, reasons: ['the event store is not reachable'] });
    h.storeAnswered();
    expect(h.assess().ok).toBe(true);
    expect(h.figures().storeErrors).toBe(1);
  });

  it('a failing projection is degraded until it folds again, and its restarts are counted', () => {
    const h = new HealthRegistry();
    h.projectionAt('runs', 10);
    h.projectionFailed('runs', 'boom');
    expect(h.assess()).toEqual({ ok: false, reasons: ['projection runs is failing: boom'] });
    h.projectionAt('runs', 11);
    expect(h.assess().ok).toBe(true);
    expect(h.figures().restarts).toEqual([['runs', 1]]);
  });

  it('a projection is far behind when a head seen 30 s ago is still not folded', () => {
    let now = 0;
    const h = new HealthRegistry(() => now);
    h.projectionAt('runs', 100);
    expect(h.assess(150).ok).toBe(true);
    now = 29_000;
    h.projectionAt('runs', 120);
    expect(h.assess(200).ok).toBe(true);
    now = 30_000;
    expect(h.assess(200)).toEqual({ ok: false, reasons: ['projection runs is far behind the store (at 120)'] });
    h.projectionAt('runs', 150);
    // The head seen at 0 is folded; the one seen at 29 s is not yet 30 s old.
    expect(h.assess(200).ok).toBe(true);
  });
});

describe('a catch-up subscription over a store that drops connections', () => {
  it('reads again from the last event delivered: no gap, no event twice', async () => {
    const store = new (class extends InMemoryEventStore {
      reads = 0;
      override async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
        if (++this.reads % 2 === 0) throw new Error('Connection terminated unexpectedly');
        return super.readAll(options);
      }
    })();
    for (let i = 0; i < 25; i++) await store.append(`s-${i % 3}`, [{ type: 'T', data: { i } }]);
    const sub = store.subscribe({ batchSize: 4 });
    const seen: number[] = [];
    for await (const e of sub) {
      seen.push(e.position);
      if (seen.length === 25) break;
    }
    sub.close();
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(store.reads).toBeGreaterThan(10);
  });
});
