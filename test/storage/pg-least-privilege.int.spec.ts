import { randomBytes } from 'node:crypto';
import { recordFrom } from '../../src/review-gate/decision-log/chain';
import { quoteIdent } from '../../src/shared/postgres-tables';
import { openStorage, type Storage } from '../../src/storage/storage';
import { decisionEvent } from '../review-gate/decision-log/fixtures';
import { dropSchema, freshSchema, PG_URL, withClient } from '../support/pg';

// A deployment whose tables an owner role created and migrated, served by a role that may only use
// them (no right to create anything): triad starts, and every store reads and writes.

async function writeAndRead(storage: Storage, runId: string): Promise<void> {
  await storage.events.append(`run-${runId}`, [{ id: `ev-${runId}`, type: 'RunLaunched', data: { runId } }]);
  expect((await storage.events.readStream(`run-${runId}`)).map((e) => e.id)).toEqual([`ev-${runId}`]);
  await storage.checkpoints.save({
    runId,
    revision: 1,
    position: 1,
    schemaVersion: 1,
    contentHash: 'sha256:0',
    createdAt: '2026-01-01T00:00:00.000Z',
    reason: 'manual',
    state: { runId },
  });
  expect(await storage.checkpoints.latest(runId)).toMatchObject({ runId, revision: 1 });
  expect(await storage.leases.tryAcquire(runId, 'owner-a', 60_000, Date.now())).toBe(true);
}

describe('PostgreSQL: a role that may use the tables but create nothing', () => {
  const schema = freshSchema('triad_least');
  const role = `${schema}_app`;
  const password = randomBytes(12).toString('hex');
  const q = quoteIdent(schema);

  afterAll(async () => {
    try {
      await dropSchema(schema);
    } finally {
      await withClient((c) => c.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`));
    }
  });

  it('given a schema the owner migrated, when the app role opens the storage, then it starts and every store works, and the missing index is only warned of', async () => {
    // The owner sets everything up (the run leases' owner index dropped, as on an older deployment).
    const owner = await openStorage({ store: 'postgres', pgUrl: PG_URL, dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 1 });
    try {
      await writeAndRead(owner, 'run_owner');
      expect(await owner.decisions.append(recordFrom(decisionEvent(1), null))).toEqual({ appended: true });
    } finally {
      await owner.close();
    }
    await withClient((c) =>
      c.query(`DROP INDEX ${q}.run_leases_owner;
        CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '${password}';
        GRANT USAGE ON SCHEMA ${q} TO ${quoteIdent(role)};
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${q} TO ${quoteIdent(role)};
        GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${q} TO ${quoteIdent(role)};`),
    );

    const url = new URL(PG_URL);
    url.username = role;
    url.password = password;
    const warnings: string[] = [];
    const app = await openStorage({ store: 'postgres', pgUrl: url.toString(), dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 1, logger: { warn: (m) => warnings.push(m) } });
    try {
      await writeAndRead(app, 'run_app');
      expect(await app.decisions.append(recordFrom(decisionEvent(2), (await app.decisions.last())!))).toEqual({ appended: true });
      expect(await app.leases.loads(Date.now())).toEqual(expect.any(Array));
    } finally {
      await app.close();
    }
    expect(warnings).toEqual([expect.stringMatching(/index run_leases_owner is missing and this role may not create it/)]);
    expect(warnings.join('\n')).not.toContain(password);
  });
});
