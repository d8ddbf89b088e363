import { randomUUID } from 'node:crypto';
import { seedRunAwaitingReview } from '../../bench/seed-review';
import { openStorage, type Storage } from '../../src/storage/storage';
import { copyStore, TargetHoldsOtherDataError, verifyCopy } from '../../src/storage/store-copy';
import { eraseTarget, InvalidStoreUrlError, parseStoreUrl } from '../../src/storage/store-target';

// The copy between two in-memory storages: what it copies, how it resumes, what it refuses and
// what its verification catches. The CLI over SQLite and PostgreSQL is test/storage/store-copy.int.spec.ts.

const memory = () => openStorage({ store: 'memory', dataDir: '/unused' });

async function seeded(runs: number): Promise<Storage> {
  const s = await memory();
  for (let i = 0; i < runs; i++) await seedRunAwaitingReview(s.events, { launchedBy: 'user:ann' });
  await s.events.append('apikeys', [{ type: 'ApiKeyAdded', data: { name: 'bob', roles: ['reviewer'], hash: 'sha256:x', addedBy: 'user:ann', at: new Date().toISOString() } }]);
  return s;
}

describe('copyStore', () => {
  it('given a store, when copied into an empty one, then every event is there as recorded and the copy verifies', async () => {
    const source = await seeded(3);
    const target = await memory();
    const report = await copyStore(source, target, { batchEvents: 5 });
    expect(report.events).toEqual({ copied: 25, alreadyInTarget: 0 });
    expect(await target.events.readAll()).toEqual(await source.events.readAll());
    expect(report.verification).toMatchObject({ ok: true, decisionLog: { ok: true, records: 0 } });
    expect(report.verification.target).toEqual(report.verification.source);
    expect(report.verification.source).toMatchObject({ events: 25, streams: 4, runs: 3, apiKeyEvents: 1 });
  });

  it('given a target holding the first events of the source, when copied again, then it continues after them', async () => {
    const source = await seeded(2);
    const target = await memory();
    await target.events.appendRecorded(await source.events.readAll({ maxCount: 6 }));
    const report = await copyStore(source, target, { batchEvents: 4 });
    expect(report.events).toEqual({ copied: 11, alreadyInTarget: 6 });
    expect(report.verification.ok).toBe(true);
  });

  it('given a target holding other events, then it is refused and nothing is written', async () => {
    const source = await seeded(1);
    const target = await memory();
    await target.events.append('run-other', [{ id: randomUUID(), type: 'Other', data: {} }]);
    await expect(copyStore(source, target)).rejects.toBeInstanceOf(TargetHoldsOtherDataError);
    expect(await target.events.headPosition()).toBe(1);
  });

  it('given a copy changed afterwards, then verification names the first difference', async () => {
    const source = await seeded(1);
    const target = await memory();
    const report = await copyStore(source, target);
    await target.events.append('run-extra', [{ type: 'Extra', data: {} }]);
    const v = await verifyCopy(source, target, report.head, []);
    expect(v.ok).toBe(false);
    expect(v.difference).toMatch(/the target holds an event the source has not copied: position 10/);
    expect(v.source.hash).not.toBe(v.target.hash);
  });
});

describe('parseStoreUrl', () => {
  it('reads sqlite data directories, PostgreSQL URLs with a schema, and EventStoreDB URLs', () => {
    expect(parseStoreUrl('sqlite:copy', '/work')).toEqual({ kind: 'sqlite', dataDir: '/work/copy' });
    expect(parseStoreUrl('sqlite:///var/lib/triad', '/work')).toEqual({ kind: 'sqlite', dataDir: '/var/lib/triad' });
    expect(parseStoreUrl('postgres://u:pw@db:5432/triad?schema=moved')).toEqual({ kind: 'postgres', url: 'postgres://u:pw@db:5432/triad', schema: 'moved' });
    expect(parseStoreUrl('postgresql://db/triad')).toMatchObject({ kind: 'postgres', schema: 'public' });
    expect(parseStoreUrl('esdb://localhost:2113?tls=false')).toEqual({ kind: 'esdb', url: 'esdb://localhost:2113?tls=false' });
  });

  it('refuses unknown schemes, a missing path or host and a bad schema, without echoing a password', () => {
    for (const bad of ['mysql://x/y', 'sqlite:', 'not a url', 'postgres:///triad', 'postgres://h/db?schema=a-b', 'file:///tmp/x']) {
      expect(() => parseStoreUrl(bad)).toThrow(InvalidStoreUrlError);
    }
    expect(() => parseStoreUrl('redis://user:secret@h/0')).toThrow(/redis:/);
    expect(() => parseStoreUrl('redis://user:secret@h/0')).not.toThrow(/secret/);
  });

  it('--force never drops the public schema or erases an EventStoreDB target', async () => {
    await expect(eraseTarget({ kind: 'postgres', url: 'postgres://h/db', schema: 'public' })).rejects.toThrow(/does not do to public/);
    await expect(eraseTarget({ kind: 'esdb', url: 'esdb://h:2113' })).rejects.toBeInstanceOf(InvalidStoreUrlError);
  });
});
