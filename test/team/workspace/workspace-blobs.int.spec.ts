import { join } from 'node:path';
import { EsdbConnection } from '../../../src/events/esdb.client';
import { EsdbEventStore } from '../../../src/events/event-store/esdb.event-store';
import type { EventStore } from '../../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { PostgresEventStore } from '../../../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { BLOB_CHUNK_BYTES, blobStreamId, sha256Of } from '../../../src/team/workspace/workspace-effects';
import { loadBlob, storeBlob } from '../../../src/team/workspace/workspace-log';
import { esdbTarget, freshNamespace, type EsdbTarget } from '../../support/esdb';
import { dropSchema, freshSchema, PG_URL } from '../../support/pg';
import { tempDir } from '../../support/temp-dir';

/**
 * Workspace blobs go through the EventStore port, with no storage of their own: every adapter
 * stores a content bigger than one event in chunks under its event size limit, stores it once, and
 * gives it back byte for byte.
 */
type Adapter = { name: string; open(): Promise<{ store: EventStore; close(): Promise<void> }> };

const adapters: Adapter[] = [
  { name: 'memory', open: async () => ({ store: new InMemoryEventStore(), close: async () => undefined }) },
  {
    name: 'sqlite',
    open: async () => {
      const dir = tempDir();
      const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
      return { store, close: async () => (await store.close(), dir.remove()) };
    },
  },
  {
    name: 'postgres',
    open: async () => {
      const schema = freshSchema('triad_wsblob');
      const store = await PostgresEventStore.connect({ url: PG_URL, schema });
      return { store, close: async () => (await store.close(), await dropSchema(schema), undefined) };
    },
  },
  {
    name: 'esdb',
    open: async () => {
      const target: EsdbTarget = await esdbTarget();
      const conn = new EsdbConnection(target.url);
      const store = new EsdbEventStore(conn, { namespace: freshNamespace() });
      return { store, close: async () => (await conn.close(), await target.stop()) };
    },
  },
];

describe.each(adapters)('workspace blobs on the $name store', ({ open }) => {
  it('stores a content over one event in chunks, once, and reads it back byte for byte', async () => {
    const { store, close } = await open();
    try {
      // Two and a half chunks of bytes that are not text (base64 in the events).
      const bytes = Buffer.from(Array.from({ length: Math.floor(BLOB_CHUNK_BYTES * 2.5) }, (_, i) => (i * 7919) % 256));
      const sha = await storeBlob(store, bytes);
      expect(sha).toBe(sha256Of(bytes));
      expect(await storeBlob(store, bytes)).toBe(sha);
      expect((await store.readStream(blobStreamId(sha))).length).toBe(3);
      const back = await loadBlob(store, sha);
      expect(back.ok && back.bytes.equals(bytes)).toBe(true);
      expect(await loadBlob(store, sha256Of(Buffer.from('never stored')))).toEqual({ ok: false, reason: expect.stringContaining('not in the event store') });
    } finally {
      await close();
    }
  });
});
