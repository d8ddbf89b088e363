import { DurabilityError, WalSync } from '../../src/events/wal-sync';
import { tempDir } from '../support/temp-dir';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

/** An fdatasync that completes only when the test says so, recording when each one started. */
function heldSync() {
  const calls: Array<{ fd: number; done: (err: NodeJS.ErrnoException | null) => void; writesBefore: number }> = [];
  let writes = 0;
  return {
    calls,
    write: () => ++writes,
    fn: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => calls.push({ fd, done, writesBefore: writes }),
  };
}

const settled = () => new Promise((r) => setImmediate(r));

describe('WalSync: group fdatasync of the WAL', () => {
  const dir = tempDir();
  const wal = join(dir.path, 'triad.db-wal');
  writeFileSync(wal, '');
  afterAll(() => dir.remove());

  it('given a sync in flight, when more callers arrive, then they share the one next sync, started after it', async () => {
    const disk = heldSync();
    const sync = new WalSync(wal, disk.fn);
    const order: string[] = [];
    disk.write();
    const a = sync.sync().then(() => order.push('a'));
    disk.write();
    const b = sync.sync().then(() => order.push('b'));
    const c = sync.sync().then(() => order.push('c'));
    expect(disk.calls).toHaveLength(1);
    // b and c wrote after the first sync started: it does not cover them.
    disk.calls[0].done(null);
    await a;
    await settled();
    expect(order).toEqual(['a']);
    expect(disk.calls).toHaveLength(2);
    expect(disk.calls[1].writesBefore).toBe(2);
    disk.calls[1].done(null);
    await Promise.all([b, c]);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(sync.syncs).toBe(2);
    await sync.close();
  });

  it('given no sync in flight, when one caller arrives, then its sync starts at once', async () => {
    const disk = heldSync();
    const sync = new WalSync(wal, disk.fn);
    const p = sync.sync();
    expect(disk.calls).toHaveLength(1);
    disk.calls[0].done(null);
    await expect(p).resolves.toBeUndefined();
    await sync.close();
  });

  it('given an fdatasync fails, then its callers and the queued ones fail, and every later call fails without touching the disk', async () => {
    const disk = heldSync();
    const sync = new WalSync(wal, disk.fn);
    const first = sync.sync();
    const queued = sync.sync();
    disk.calls[0].done(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    await expect(first).rejects.toBeInstanceOf(DurabilityError);
    await expect(queued).rejects.toThrow(/could not make its writes durable .*EIO/);
    await expect(sync.sync()).rejects.toBe(sync.failure);
    expect(disk.calls).toHaveLength(1);
    await sync.close();
  });

  it('given a sync in flight, when closing, then close waits for it', async () => {
    const disk = heldSync();
    const sync = new WalSync(wal, disk.fn);
    const p = sync.sync();
    let closed = false;
    const closing = sync.close().then(() => (closed = true));
    await settled();
    expect(closed).toBe(false);
    disk.calls[0].done(null);
    await Promise.all([p, closing]);
    expect(closed).toBe(true);
    await expect(sync.sync()).rejects.toThrow(/closed/);
  });

  it('given the sync call itself throws, then its callers fail instead of waiting forever', async () => {
    const sync = new WalSync(wal, () => {
      throw new Error('EBADF: bad file descriptor');
    });
    await expect(sync.sync()).rejects.toThrow(/EBADF/);
    await expect(sync.close()).resolves.toBeUndefined();
  });

  it('given syncs queued behind one in flight, when closing, then close waits for them all and refuses new ones', async () => {
    const disk = heldSync();
    const sync = new WalSync(wal, disk.fn);
    const first = sync.sync();
    const queued = sync.sync();
    const closing = sync.close();
    await expect(sync.sync()).rejects.toThrow(/closed/);
    disk.calls[0].done(null);
    await first;
    await settled();
    expect(disk.calls).toHaveLength(2);
    disk.calls[1].done(null);
    await Promise.all([queued, closing]);
  });

  it('given no WAL file, then the sync fails with the reason', async () => {
    const sync = new WalSync(join(dir.path, 'missing-wal'), heldSync().fn);
    await expect(sync.sync()).rejects.toThrow(/ENOENT/);
  });

  it('syncs a real file with the real fdatasync', async () => {
    const sync = new WalSync(wal);
    await Promise.all([sync.sync(), sync.sync(), sync.sync()]);
    expect(sync.syncs).toBeGreaterThanOrEqual(1);
    expect(sync.syncs).toBeLessThanOrEqual(2);
    await sync.close();
  });
});
