import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { EventStore } from '../../src/events/event-store/event-store.port';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { recordFrom } from '../../src/review-gate/decision-log/chain';
import type { DecisionRecord } from '../../src/review-gate/decision-log/decision-record';
import type { ReviewDecidedData } from '../../src/team/domain/run-events';
import { toRunStreamId } from '../../src/team/domain/run-events';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { tempDir } from '../support/temp-dir';
import {
  API_KEYS_ENV,
  awaitingReview,
  freshPgSchema,
  KEYS,
  launch,
  lastJson,
  pendingReviewOf,
  PG_URL,
  runCli,
  runEvents,
  startServer,
  waitForRun,
  type GateServer,
  type PgSchema,
} from '../review-gate/gate/gate-support';

// Forgeries of the decision log, made the way someone who can write the store would make them —
// straight into SQLite or PostgreSQL, with a valid hash chain — against a real `triad serve`. Before
// decisions were attested, each made a run `completed` "approved by user:bob" and passed `verify`.

jest.setTimeout(180_000);

type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response JSON, asserted on

describe.each([['sqlite'], ['postgres']])('forged decisions (%s)', (kind) => {
  const dir = tempDir('triad-forgery-');
  const dataDir = join(dir.path, 'data');
  let pg: PgSchema | undefined;
  let server: GateServer;
  let env: Record<string, string>;

  const openStore = async (): Promise<EventStore> =>
    pg ? PostgresEventStore.connect({ url: PG_URL, schema: pg.schema }) : new SqliteEventStore({ file: join(dataDir, 'triad.db') });

  /** Appends a decision and its consequence to the run's stream, as a store writer would. */
  async function forgeApproval(runId: string, change: Partial<ReviewDecidedData> = {}): Promise<ReviewDecidedData> {
    const run = await waitForRun(server, runId, awaitingReview);
    const review = pendingReviewOf(run);
    const events = await runEvents(server, runId);
    const launched = events.find((e) => e.type === 'RunLaunched')!.data as { acceptanceCriteria: string[] };
    const opened = events.filter((e) => e.type === 'ReviewOpened').pop()!.data as { charterVersion: string };
    const at = new Date().toISOString();
    const data: ReviewDecidedData = {
      decisionId: `forged-${runId}`,
      reviewId: review.reviewId,
      iteration: review.iteration,
      outcome: 'approved',
      reason: 'looks good to me',
      executor: review.executor,
      decider: 'user:bob',
      deciderKind: 'human',
      authenticatedBy: 'api_key',
      acceptanceCriteria: launched.acceptanceCriteria,
      artifactHash: review.artifactHash,
      charterVersion: opened.charterVersion,
      at,
      ...change,
    };
    const store = await openStore();
    try {
      const revision = await store.streamRevision(toRunStreamId(runId));
      await store.append(
        toRunStreamId(runId),
        [
          { type: 'ReviewDecided', data, metadata: { runId, actor: 'user:bob' } },
          { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', message: 'approved by user:bob: looks good to me', at }, metadata: { runId } },
        ],
        { expectedRevision: revision! },
      );
    } finally {
      await store.close();
    }
    return data;
  }

  const verify = async (): Promise<Loose> => {
    const res = await server.request('GET', '/v1/decisions/verify', { as: 'aud' });
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    mkdirSync(dataDir, { recursive: true });
    pg = kind === 'postgres' ? await freshPgSchema() : undefined;
    // The CLI knows the keys as the server does (TRIAD_API_KEYS, or keys in the store).
    env = { TRIAD_DATA_DIR: dataDir, TRIAD_API_KEYS: API_KEYS_ENV, ...(pg?.env ?? {}) };
    server = await startServer(env);
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await pg?.drop();
    dir.remove();
  });

  it('an approval and a RunEnded appended straight into the store are not acted on: the run stays at its gate and says why; verify names it unsigned', async () => {
    const runId = await launch(server);
    const forged = await forgeApproval(runId);

    // The decision log records it (the chain is valid) …
    const listed = await server.request<Loose>('GET', `/v1/decisions?runId=${runId}`, { as: 'aud' });
    expect(listed.body.decisions).toEqual([expect.objectContaining({ decisionId: forged.decisionId, decider: 'user:bob', outcome: 'approved' })]);
    // … but the run waits as if it were not there, and says why.
    const run = await waitForRun(server, runId, (r) => (r.refused?.length ?? 0) >= 2);
    expect(run).toMatchObject({ status: 'awaiting_review', pendingReview: { reviewId: forged.reviewId } });
    expect(run.refused).toEqual([
      expect.objectContaining({ type: 'ReviewDecided', problem: 'unsigned', decisionId: forged.decisionId, decider: 'user:bob' }),
      expect.objectContaining({ type: 'RunEnded', problem: 'no_decision' }),
    ]);
    const shown = await runCli(['runs', 'show', runId], env);
    expect(shown.stdout).toMatch(new RegExp(`refused   review decision ${forged.decisionId} \\(approved by user:bob\\) at position \\d+ ignored: unsigned`));

    const result = await verify();
    expect(result.ok).toBe(false);
    expect(result.firstBadRecord).toBeUndefined();
    expect(result.attestations.issues).toEqual([expect.objectContaining({ type: 'ReviewDecided', id: forged.decisionId, of: 'server', problem: 'unsigned' })]);
    const cli = await runCli(['decisions', 'verify'], env);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain(`ReviewDecided ${forged.decisionId} at position`);

    // The gate still works for the real reviewer, and the run ends on that decision alone.
    const approved = await server.request('POST', `/v1/reviews/${forged.reviewId}/approve`, { as: 'bob', body: { reason: 'checked the files' } });
    expect(approved.status).toBe(200);
    const done = await waitForRun(server, runId, (r) => r.status === 'completed');
    expect(done.message).toBe('approved by user:bob: checked the files');
    const decided = (await runEvents(server, runId)).filter((e) => e.type === 'ReviewDecided').map((e) => e.data as ReviewDecidedData);
    expect(decided.map((d) => [d.decisionId === forged.decisionId, Boolean(d.attestation), d.authenticatedBy])).toEqual([
      [true, false, 'api_key'],
      [false, true, 'api_key'],
    ]);
  });

  it('an attestation moved from a real decision onto a forged one is bad_signature, and the run is not ended by it', async () => {
    const real = await launch(server);
    const review = pendingReviewOf(await waitForRun(server, real, awaitingReview));
    expect((await server.request('POST', `/v1/reviews/${review.reviewId}/approve`, { as: 'bob', body: { reason: 'fine' } })).status).toBe(200);
    const attestation = (await runEvents(server, real)).find((e) => e.type === 'ReviewDecided')!.data as ReviewDecidedData;
    expect(attestation.attestation).toBeDefined();

    const target = await launch(server);
    const forged = await forgeApproval(target, { attestation: attestation.attestation, reason: 'fine' });
    const run = await waitForRun(server, target, (r) => (r.refused?.length ?? 0) >= 2);
    expect(run.status).toBe('awaiting_review');
    expect(run.refused![0]).toMatchObject({ problem: 'bad_signature', decisionId: forged.decisionId });
    expect((await verify()).attestations.issues).toContainEqual(expect.objectContaining({ id: forged.decisionId, problem: 'bad_signature' }));

    // The real decision itself, every byte of it, replayed into another run waiting at its gate.
    const third = await launch(server);
    await forgeApproval(third, { ...attestation });
    const replayed = await waitForRun(server, third, (r) => (r.refused?.length ?? 0) >= 2);
    expect(replayed.status).toBe('awaiting_review');
    expect(replayed.refused![0]).toMatchObject({ problem: 'bad_signature', decisionId: attestation.decisionId });
  });

  it('a CLI decision by name alone is refused with one line, and writes nothing', async () => {
    const runId = await launch(server);
    const review = pendingReviewOf(await waitForRun(server, runId, awaitingReview));
    const before = (await runEvents(server, runId)).length;
    const r = await runCli(['review', 'approve', review.reviewId, '--reason', 'ok', '--as', 'bob'], env);
    expect(r.code).toBe(5);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/deciding needs a credential.*--as alone proves nothing/)]);
    expect((await runEvents(server, runId)).length).toBe(before);
    // With bob's key, the CLI decides as bob, and the record says how.
    const ok = await runCli(['review', 'approve', review.reviewId, '--reason', 'ok', '--json'], { ...env, TRIAD_API_KEY: KEYS.bob });
    expect(ok.code).toBe(0);
    const decided = (await runEvents(server, runId)).find((e) => e.type === 'ReviewDecided')!.data as ReviewDecidedData;
    expect(decided).toMatchObject({ decider: 'user:bob', authenticatedBy: 'api_key', attestation: expect.any(Object) });
    const run: RunSummary = await waitForRun(server, runId, (x) => x.status === 'completed');
    expect(run.refused).toBeUndefined();
  });

  it('an API key appended straight into the store does not work; one added through triad does', async () => {
    const secret = 'forged-key-secret-0123456789';
    const store = await openStore();
    try {
      await store.append('apikeys', [{ type: 'ApiKeyAdded', data: { name: 'mallory', roles: ['admin'], secretHash: createHash('sha256').update(secret).digest('hex'), addedBy: 'user:ann', at: new Date().toISOString() } }]);
    } finally {
      await store.close();
    }
    // The server follows the keys stream: the forged key is seen, and ignored.
    await waitForLog(server, /stored API key 'mallory' .* has no valid attestation; ignored/);
    expect((await server.request('GET', '/v1/runs', { as: { secret } })).status).toBe(401);

    const added = await runCli(['keys', 'add', 'trent', '--roles', 'auditor', '--json'], env);
    expect(added.code).toBe(0);
    const real = lastJson<{ secret: string }>(added.stdout).secret;
    const deadline = Date.now() + 20_000;
    while ((await server.request('GET', '/v1/decisions/head', { as: { secret: real } })).status !== 200) {
      if (Date.now() > deadline) throw new Error('the key added through triad never worked');
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('a decision edited in event and record and re-chained is caught (bad_signature); deleting the tail with its events is caught against a signed head kept from an earlier bundle', async () => {
    const runId = await launch(server);
    const review = pendingReviewOf(await waitForRun(server, runId, awaitingReview));
    expect((await server.request('POST', `/v1/reviews/${review.reviewId}/approve`, { as: 'bob', body: { reason: 'as asked' } })).status).toBe(200);
    await waitForRun(server, runId, (r) => r.status === 'completed');
    expect((await verify()).attestations.issues.filter((i: Loose) => i.problem !== 'unsigned' && i.problem !== 'bad_signature')).toEqual([]);

    // An auditor exports a bundle and keeps it (its head is signed).
    const bundle1 = join(dir.path, `before-${kind}.json`);
    expect((await runCli(['decisions', 'export', '--bundle', bundle1], env)).code).toBe(0);
    const kept = JSON.parse(readFileSync(bundle1, 'utf8')) as Loose;

    // The last decision's event and record are edited together and the chain is rebuilt.
    const sql = await rawSql(dataDir, pg);
    try {
      const lastDecision = await sql.one<{ position: number; data: unknown }>(`SELECT position, data FROM ${sql.t('events')} WHERE type = 'ReviewDecided' ORDER BY position DESC LIMIT 1`);
      const data = (typeof lastDecision.data === 'string' ? JSON.parse(lastDecision.data) : lastDecision.data) as ReviewDecidedData;
      expect(data.reason).toBe('as asked');
      data.reason = 'as asked, and more';
      await sql.run(`UPDATE ${sql.t('events')} SET data = ${sql.p(1)} WHERE position = ${sql.p(2)}`, [JSON.stringify(data), lastDecision.position]);
      await rechain(sql);
    } finally {
      await sql.close();
    }
    const edited = await verify();
    expect(edited.firstBadRecord).toBeUndefined();
    expect(edited.ok).toBe(false);
    expect(edited.attestations.issues).toContainEqual(expect.objectContaining({ type: 'ReviewDecided', problem: 'bad_signature' }));

    // The tail (the last record and its events) is deleted: against the kept head, truncation.
    const sql2 = await rawSql(dataDir, pg);
    try {
      const last = await sql2.one<{ position: number; stream_id: string }>(`SELECT position, stream_id FROM ${sql2.t('events')} WHERE type = 'ReviewDecided' ORDER BY position DESC LIMIT 1`);
      await sql2.run(`DELETE FROM ${sql2.t('events')} WHERE stream_id = ${sql2.p(1)} AND position >= ${sql2.p(2)}`, [last.stream_id, last.position]);
      await sql2.run(`DELETE FROM ${sql2.t('decision_records')} WHERE position = ${sql2.p(1)}`, [last.position]);
    } finally {
      await sql2.close();
    }
    const against = await runCli(['decisions', 'verify', '--since', bundle1, '--json'], env);
    expect(against.code).toBe(1);
    expect(lastJson<Loose>(against.stdout).since).toMatchObject({ extends: false, detail: expect.stringMatching(/not found/) });

    // And a bundle exported now, verified with no store in an empty directory against the kept head.
    const bundle2 = join(dir.path, `after-${kind}.json`);
    expect((await runCli(['decisions', 'export', '--bundle', bundle2], env)).code).toBe(0);
    const empty = tempDir('triad-auditor-');
    try {
      const audit = await runCli(['decisions', 'verify', '--bundle', bundle2, '--since', bundle1, '--json'], { HOME: empty.path, TRIAD_DATA_DIR: join(empty.path, 'none') });
      expect(audit.code).toBe(1);
      expect(lastJson<Loose>(audit.stdout).since).toMatchObject({ seq: kept.head.seq, extends: false });
      expect(existsSync(join(empty.path, 'none'))).toBe(false);
      expect(existsSync(join(empty.path, '.config'))).toBe(false);
    } finally {
      empty.remove();
    }
  });


});

/** Waits for a line of the server's log (stderr or stdout) to match. */
async function waitForLog(server: GateServer, pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(server.stderr) && !pattern.test(server.stdout)) {
    if (Date.now() > deadline) throw new Error(`no log line matched ${pattern}:\n${server.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface RawSql {
  /** A table's name in this database (schema-qualified on PostgreSQL). */
  t(name: string): string;
  /** The n-th parameter's placeholder. */
  p(n: number): string;
  one<T>(sql: string, params?: unknown[]): Promise<T>;
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  run(sql: string, params?: unknown[]): Promise<void>;
  close(): Promise<void>;
}

async function rawSql(dataDir: string, pg: PgSchema | undefined): Promise<RawSql> {
  if (!pg) {
    const db = new Database(join(dataDir, 'triad.db'));
    db.pragma('busy_timeout = 10000');
    return {
      t: (name) => name,
      p: () => '?',
      one: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).get(...params) as T,
      all: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).all(...params) as T[],
      run: async (sql, params = []) => void db.prepare(sql).run(...params),
      close: async () => void db.close(),
    };
  }
  const client = new Client({ connectionString: PG_URL });
  await client.connect();
  return {
    t: (name) => `"${pg.schema}".${name}`,
    p: (n) => `$${n}`,
    one: async <T>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows[0] as T,
    all: async <T>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as T[],
    run: async (sql, params = []) => void (await client.query(sql, params)),
    close: () => client.end(),
  };
}

/** Rebuilds every record from the decision events as they now read, as someone covering an edit would. */
async function rechain(sql: RawSql): Promise<void> {
  const events = await sql.all<{ type: string; stream_id: string; position: number; data: unknown; metadata: unknown }>(
    `SELECT type, stream_id, position, data, metadata FROM ${sql.t('events')} WHERE type IN ('ReviewDecided', 'ToolApprovalDecided') ORDER BY position`,
  );
  let prev: DecisionRecord | undefined;
  const seen = new Set<string>();
  for (const e of events) {
    const parse = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
    // As the projector does: one record per decision id (a replayed copy has none of its own).
    const id = String((parse(e.data) as { decisionId?: string; approvalId?: string }).decisionId ?? (parse(e.data) as { approvalId?: string }).approvalId);
    if (seen.has(id)) continue;
    seen.add(id);
    const record = recordFrom({ type: e.type, streamId: e.stream_id, position: Number(e.position), data: parse(e.data), metadata: parse(e.metadata) as { runId?: string } }, prev);
    await sql.run(`UPDATE ${sql.t('decision_records')} SET reason = ${sql.p(1)}, prev_hash = ${sql.p(2)}, hash = ${sql.p(3)} WHERE seq = ${sql.p(4)}`, [record.reason, record.prevHash, record.hash, record.seq]);
    prev = record;
  }
}
