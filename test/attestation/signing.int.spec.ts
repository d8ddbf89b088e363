import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openSigning } from '../../src/attestation/signing';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { tempDir } from '../support/temp-dir';
import { decisionEvent } from '../review-gate/decision-log/fixtures';

/**
 * Where a store's signing begins, and what a store writer can do about it: the head when signing
 * began is signed into the key's registration, and a store that lost the record of a key that
 * signed before trusts nothing unsigned. Real SQLite files, real key files.
 */
describe('the start of a store’s signing', () => {
  const dir = tempDir('triad-signing-');
  afterAll(() => dir.remove());
  const settings = (name: string) => ({ keyFile: join(dir.path, `${name}.pem`), trustedKeys: [], requireSignedDecisions: false });

  async function legacyStore(name: string) {
    const file = join(dir.path, `${name}.db`);
    const store = new SqliteEventStore({ file });
    const legacy = decisionEvent(1);
    await store.append(legacy.streamId, [{ type: legacy.type, data: legacy.data }]);
    return { store, file, legacy };
  }

  it('given a store with decisions from before signing and a key made now, then those are acted on, and one appended after is not', async () => {
    const { store, legacy } = await legacyStore('upgraded');
    const signing = await openSigning(store, settings('upgraded'), () => Date.now());
    const [recorded] = await store.readStream(legacy.streamId);
    expect(signing.trust.refusal(recorded.type, recorded.data, recorded)).toBeUndefined();
    await store.append(legacy.streamId, [{ type: legacy.type, data: { ...(legacy.data as object), decisionId: 'later' } }]);
    const [, later] = await store.readStream(legacy.streamId);
    expect(signing.trust.refusal(later.type, later.data, later)).toBe('unsigned');
    await store.close();
  });

  it('given the signing-keys stream deleted and the key that signed before, then nothing unsigned is acted on, and the store says so', async () => {
    const { store, file, legacy } = await legacyStore('emptied');
    await openSigning(store, settings('emptied'), () => Date.now());
    await store.close();
    // The store writer removes the record of signing, to pass a forged decision off as an old one.
    const db = new Database(file);
    db.prepare("DELETE FROM events WHERE stream_id = 'signing-keys'").run();
    db.close();
    const reopened = new SqliteEventStore({ file });
    const signing = await openSigning(reopened, settings('emptied'), () => Date.now());
    expect(signing.warning).toMatch(/no record of this server's signing key/);
    const [recorded] = await reopened.readStream(legacy.streamId);
    expect(signing.trust.refusal(recorded.type, recorded.data, recorded)).toBe('unsigned');
    await reopened.close();
  });

  it('given the registration moved to a later position, then the signed head still bounds what counts as before signing', async () => {
    const { store, file, legacy } = await legacyStore('moved');
    await openSigning(store, settings('moved'), () => Date.now());
    await store.append(legacy.streamId, [{ type: legacy.type, data: { ...(legacy.data as object), decisionId: 'forged' } }]);
    await store.close();
    const db = new Database(file);
    db.prepare("UPDATE events SET position = 1000 WHERE stream_id = 'signing-keys'").run();
    db.close();
    const reopened = new SqliteEventStore({ file });
    const signing = await openSigning(reopened, settings('moved'), () => Date.now());
    const [, forged] = await reopened.readStream(legacy.streamId);
    expect(forged.position).toBeLessThan(1000);
    expect(signing.trust.refusal(forged.type, forged.data, forged)).toBe('unsigned');
    await reopened.close();
  });
});
