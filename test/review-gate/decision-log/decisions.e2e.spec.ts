import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { seedRunAwaitingReview } from '../../../bench/seed-review';
import { serverSignedStore } from '../../support/server-signed-store';
import type { EventStore } from '../../../src/events/event-store/event-store.port';
import { PostgresEventStore } from '../../../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { recordFrom } from '../../../src/review-gate/decision-log/chain';
import { parseCsv } from '../../../src/review-gate/decision-log/decision-export';
import { DECISION_RECORD_FIELDS, GENESIS_PREV_HASH, type DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { DECISION_COLUMNS, rowValues } from '../../../src/review-gate/decision-log/decision-record.rows';
import { tempDir } from '../../support/temp-dir';
import { decisionEvent } from './fixtures';
import { runCli, startDecisionsServer, type DecisionsServer, type KeyName } from './decisions-server';
import { PG_URL } from '../../support/pg';
import { waitFor } from '../../support/wait-for';

// The decision log end to end: real decisions through the real routes (one run driven by the
// offline model, others brought to the gate by appending their events), the projector writing
// records in the server process, then raw SQL tampering in the database, caught by
// GET /v1/decisions/verify and by `triad decisions verify` — on SQLite and on PostgreSQL.

jest.setTimeout(120_000);

const TRICKY_REASON = 'Missing tests — "hello.txt" lacks a newline,\nand the summary, well, ünïcødé ✓';

/** Raw SQL on the server's database, from outside the app (as someone with database access). */
interface RawDb {
  /** Runs SQL in which `T` stands for the decision records table. */
  exec(sql: string): Promise<void>;
  insert(record: DecisionRecord): Promise<void>;
  close(): Promise<void>;
}

interface Setup {
  env: Record<string, string>;
  openStore(): Promise<EventStore>;
  openRaw(): Promise<RawDb>;
  cleanup(): Promise<void>;
}

const setups: Record<'sqlite' | 'postgres', () => Setup> = {
  sqlite: () => {
    const dir = tempDir('triad-decisions-e2e-');
    const dataDir = join(dir.path, 'data');
    const file = join(dataDir, 'triad.db');
    return {
      env: { TRIAD_STORE: 'sqlite', TRIAD_DATA_DIR: dataDir },
      openStore: async () => new SqliteEventStore({ file }),
      openRaw: async () => {
        const db = new Database(file);
        db.pragma('busy_timeout = 10000');
        return {
          exec: async (sql) => void db.exec(sql.replace(/\bT\b/g, 'decision_records')),
          insert: async (r) => void db.prepare(`INSERT INTO decision_records (${DECISION_COLUMNS.join(', ')}) VALUES (${DECISION_COLUMNS.map(() => '?').join(', ')})`).run(...rowValues(r)),
          close: async () => void db.close(),
        };
      },
      cleanup: async () => dir.remove(),
    };
  },
  postgres: () => {
    const dir = tempDir('triad-decisions-e2e-');
    const schema = `triad_dl_e2e_${process.pid}_${randomBytes(4).toString('hex')}`;
    return {
      env: { TRIAD_STORE: 'postgres', TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: schema, TRIAD_DATA_DIR: join(dir.path, 'data') },
      openStore: () => PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 }),
      openRaw: async () => {
        const client = new Client({ connectionString: PG_URL });
        await client.connect();
        const table = `"${schema}".decision_records`;
        return {
          exec: async (sql) => void (await client.query(sql.replace(/\bT\b/g, table))),
          insert: async (r) => void (await client.query(`INSERT INTO ${table} (${DECISION_COLUMNS.join(', ')}) VALUES (${DECISION_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`, rowValues(r))),
          close: () => client.end(),
        };
      },
      cleanup: async () => {
        const client = new Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
        dir.remove();
      },
    };
  },
};

/**
 * What verify says of the attestations when every one holds: each decision, plus the server key's
 * own registration (the `signing-keys` stream's SigningKeyRegistered, the store's first event: where
 * its signing began), all signed by the server; none signed by the decider in person here.
 */
/** Every decision and the review each decided (the escalation is a review of its own), and the signing key's registration. */
const attestedDecisions = (decisions: number, opened = decisions, registrations = 1) => ({ ok: true, checked: decisions + opened + registrations, personallySigned: 0, beforeSigning: 0, signingSince: 1, issues: [] });

/** A tool approval's fields: absent from review records. */
const APPROVAL_ONLY: string[] = ['kind', 'approvalId', 'toolName', 'inputHash', 'risk', 'role', 'turn'];

describe.each(['sqlite', 'postgres'] as const)('the decision log end to end on %s', (kind) => {
  let setup: Setup;
  let server: DecisionsServer;
  let store: EventStore;
  let raw: RawDb;
  let log: DecisionRecord[];
  const cliEnv = () => ({ ...setup.env, TRIAD_REVIEW_TIMER_MS: '0', TRIAD_RECOVERY_INTERVAL_MS: '0' });
  const cli = (...args: string[]) => runCli(args, cliEnv());

  async function decide(reviewId: string, how: 'approve' | 'reject', as: KeyName, reason: string): Promise<void> {
    const res = await server.request('POST', `/v1/reviews/${reviewId}/${how}`, { as, body: how === 'reject' ? { reason, rework: false } : { reason } });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { reviewId } });
  }

  const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 60_000, 50, () => server.stderr);

  const seed = (launchedBy = 'user:ops', reviewPolicy?: Parameters<typeof seedRunAwaitingReview>[1]['reviewPolicy']) =>
    // Written as the server writes (its key signs the review opened): the gate's decisions are what is tested.
    seedRunAwaitingReview(serverSignedStore(store), { launchedBy, reviewPolicy, acceptanceCriteria: ['file hello.txt contains "Hello"', 'the summary, mentions | pipes'] });

  beforeAll(async () => {
    setup = setups[kind]();
    server = await startDecisionsServer({ ...setup.env, TRIAD_REVIEW_TIMER_MS: '100' });
    store = await setup.openStore();

    // 1. A run the offline model drives to the human gate; a reviewer approves it.
    const launched = await server.request('POST', '/v1/runs', { as: 'ops', body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
    expect(launched.status).toBe(202);
    const reviewId = await until('the offline run to reach the human gate', async () => {
      const run = await server.request('GET', `/v1/runs/${launched.body.runId}`, { as: 'ops' });
      return run.body?.status === 'awaiting_review' ? (run.body.pendingReview.reviewId as string) : undefined;
    });
    await decide(reviewId, 'approve', 'rev', 'the greeting is there');
    // 2–4. Runs brought to the gate by their events; approved and rejected by different people.
    await decide((await seed()).reviewId, 'approve', 'rev', 'looks right');
    await decide((await seed()).reviewId, 'reject', 'rev2', TRICKY_REASON);
    await decide((await seed()).reviewId, 'approve', 'adm', 'admin override, checked');
    // 5–6. A review whose timeout escalates (the system decides), then a human approves it.
    const timed = await seed('user:ops', { timeout: { policy: 'escalate', afterMs: 50 } });
    await until('the timeout to escalate', async () => {
      const res = await server.request('GET', `/v1/decisions?runId=${timed.runId}`);
      return res.body?.decisions?.length === 1 ? true : undefined;
    });
    await decide(timed.reviewId, 'approve', 'rev', 'escalated to me; fine');
    // 7.
    await decide((await seed()).reviewId, 'reject', 'rev', 'no');
    // Refused (self-review): no decision, no record.
    const mine = await seed('user:opsrev');
    expect((await server.request('POST', `/v1/reviews/${mine.reviewId}/approve`, { as: 'opsrev', body: { reason: 'mine' } })).status).toBe(403);

    const res = await server.request('GET', '/v1/decisions');
    expect(res.status).toBe(200);
    log = res.body.decisions;
    raw = await setup.openRaw();
  });

  afterAll(async () => {
    await raw?.close();
    await store?.close();
    await server?.close();
    await setup?.cleanup();
  });

  describe('reading the log', () => {
    it('GET /v1/decisions lists every decision in log order, each record chained to the one before', () => {
      expect(log.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(log.map((r) => [r.outcome, r.decider, r.deciderKind])).toEqual([
        ['approved', 'user:rev', 'human'],
        ['approved', 'user:rev', 'human'],
        ['rejected', 'user:rev2', 'human'],
        ['approved', 'user:adm', 'human'],
        ['escalated', 'system', 'system'],
        ['approved', 'user:rev', 'human'],
        ['rejected', 'user:rev', 'human'],
      ]);
      expect(log[0].prevHash).toBe(GENESIS_PREV_HASH);
      for (let i = 1; i < log.length; i++) expect(log[i].prevHash).toBe(log[i - 1].hash);
      expect(log[4]).toMatchObject({ policy: 'escalate', reviewId: log[5].reviewId });
      expect(log[2].reason).toBe(TRICKY_REASON);
      for (const r of log) {
        expect(Object.keys(r).sort()).toEqual([...DECISION_RECORD_FIELDS].filter((f) => !APPROVAL_ONLY.includes(f) && (f !== 'policy' || r.policy !== undefined)).sort());
        expect(r).toMatchObject({
          decisionId: expect.any(String),
          runId: expect.stringMatching(/^run_/),
          reviewId: `rev_${r.runId}_${r.iteration}`,
          executor: `agent:executor:${r.runId}`,
          acceptanceCriteria: expect.arrayContaining(['file hello.txt contains "Hello"']),
          artifactHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
          charterVersion: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
          decidedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          position: expect.any(Number),
          hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
      }
    });

    it('GET /v1/decisions/verify: ok, every record checked (and the CLI agrees, exit 0)', async () => {
      const res = await server.request('GET', '/v1/decisions/verify');
      expect(res).toMatchObject({ status: 200, body: { ok: true, checked: 7 } });
      expect(res.body.firstBadRecord).toBeUndefined();
      const run = await cli('decisions', 'verify', '--json');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ ok: true, checked: 7, attestations: attestedDecisions(7) });
      expect(res.body).toEqual(JSON.parse(run.stdout));
      const human = await cli('decisions', 'verify');
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/intact: 7 record\(s\) verified against the event store, every attestation holds/);
    });

    it('only auditors (and admins) read it: 401 without a key, 403 for operators and reviewers', async () => {
      for (const path of ['/v1/decisions', '/v1/decisions/verify', '/v1/decisions?format=csv']) {
        expect((await server.request('GET', path, { as: null })).status).toBe(401);
        for (const as of ['ops', 'rev', 'opsrev'] as const) {
          const res = await server.request('GET', path, { as });
          expect(res.status).toBe(403);
          expect(res.body).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.any(String) });
        }
        expect((await server.request('GET', path, { as: 'aud' })).status).toBe(200);
        expect((await server.request('GET', path, { as: 'adm' })).status).toBe(200);
      }
    });

    it('filters by run, decider, outcome and time; pages with limit and afterSeq', async () => {
      const seqs = async (query: string) => {
        const res = await server.request('GET', `/v1/decisions?${query}`);
        expect(res.status).toBe(200);
        return (res.body.decisions as DecisionRecord[]).map((r) => r.seq);
      };
      expect(await seqs(`runId=${log[4].runId}`)).toEqual([5, 6]);
      expect(await seqs('decider=user:rev2')).toEqual([3]);
      expect(await seqs('decider=system')).toEqual([5]);
      expect(await seqs('outcome=rejected')).toEqual([3, 7]);
      expect(await seqs('outcome=escalated')).toEqual([5]);
      expect(await seqs(`from=${encodeURIComponent(log[2].decidedAt)}&to=${encodeURIComponent(log[4].decidedAt)}`)).toEqual([3, 4, 5]);
      expect(await seqs(`outcome=approved&decider=user:rev&from=${encodeURIComponent(log[1].decidedAt)}`)).toEqual([2, 6]);
      expect(await seqs('from=2999-01-01')).toEqual([]);
      expect(await seqs('to=2000-01-01T00:00:00Z')).toEqual([]);
      const page = await server.request('GET', '/v1/decisions?limit=3');
      expect(page.body.decisions.map((r: DecisionRecord) => r.seq)).toEqual([1, 2, 3]);
      expect(page.body.nextAfterSeq).toBe(3);
      const next = await server.request('GET', '/v1/decisions?limit=3&afterSeq=3');
      expect(next.body.decisions.map((r: DecisionRecord) => r.seq)).toEqual([4, 5, 6]);
      const last = await server.request('GET', '/v1/decisions?limit=3&afterSeq=6');
      expect(last.body).toEqual({ decisions: [log[6]] });
    });

    it.each([
      ['outcome=maybe', /outcome/],
      ['from=yesterday', /from/],
      ['from=2025-02-30', /from/],
      ['to=2025-13-01T00:00:00Z', /to/],
      ['to=2025-01-01T10:00:00', /to/],
      ['from=2025-02-01&to=2025-01-01', /from must not be after to/],
      ['limit=0', /limit/],
      ['limit=abc', /limit/],
      ['limit=10001', /limit/],
      ['format=xml', /format/],
      ['runId=a&runId=b', /runId/],
      ['colour=blue', /colour/],
    ])('a bad filter (%s) is 400 with a message', async (query, message) => {
      const res = await server.request('GET', `/v1/decisions?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.anything() });
      expect(JSON.stringify(res.body.message)).toMatch(message);
    });

    it('format=ndjson: one JSON record per line, the same records', async () => {
      const res = await server.request('GET', '/v1/decisions?format=ndjson');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
      const lines = res.text.split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.map((l) => JSON.parse(l))).toEqual(log);
      const filtered = await server.request('GET', '/v1/decisions?format=ndjson&outcome=rejected&limit=1');
      expect(filtered.text.trim().split('\n').map((l) => JSON.parse(l).seq)).toEqual([3]);
    });

    it('format=csv: a header row, RFC 4180 quoting, arrays joined with " | "', async () => {
      const res = await server.request('GET', '/v1/decisions?format=csv');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(res.headers.get('content-disposition')).toMatch(/attachment; filename="decisions.csv"/);
      const [header, ...rows] = parseCsv(res.text);
      expect(header).toEqual([...DECISION_RECORD_FIELDS]);
      expect(rows).toHaveLength(7);
      const col = (name: string) => header.indexOf(name);
      rows.forEach((row, i) => {
        expect(row).toHaveLength(header.length);
        expect(row[col('seq')]).toBe(String(log[i].seq));
        expect(row[col('reason')]).toBe(log[i].reason);
        expect(row[col('hash')]).toBe(log[i].hash);
        expect(row[col('acceptanceCriteria')]).toBe(log[i].acceptanceCriteria!.join(' | '));
        expect(row[col('policy')]).toBe(log[i].policy ?? '');
      });
      expect(rows[2][col('reason')]).toBe(TRICKY_REASON);
      expect(res.text).toContain('"Missing tests — ""hello.txt"" lacks a newline,\nand the summary, well, ünïcødé ✓"');
    });

    it('the CLI lists, filters and exports the same log', async () => {
      const list = await cli('decisions', 'list', '--json');
      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual(log);
      const rejected = await cli('decisions', 'list', '--outcome', 'rejected', '--decider', 'user:rev', '--json');
      expect(JSON.parse(rejected.stdout).map((r: DecisionRecord) => r.seq)).toEqual([7]);
      const human = await cli('decisions', 'list', '--run', log[4].runId);
      expect(human.stdout.trim().split('\n')).toHaveLength(2);
      expect(human.stdout).toContain('escalated');

      const out = join(setup.env.TRIAD_DATA_DIR, 'decisions.csv');
      const exported = await cli('decisions', 'export', '--format', 'csv', '--out', out);
      expect(exported.code).toBe(0);
      expect(exported.stderr).toContain('7 decision(s) written');
      expect(readFileSync(out, 'utf8')).toBe((await server.request('GET', '/v1/decisions?format=csv')).text);
      const ndjson = await cli('decisions', 'export');
      expect(ndjson.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual(log);

      expect((await cli('decisions', 'list', '--from', 'yesterday')).code).toBe(2);
      expect((await cli('decisions', 'list', '--outcome', 'maybe')).code).toBe(2);
      expect((await cli('decisions', 'export', '--format', 'xml')).code).toBe(2);
    });
  });

  describe('tampering in the database is caught, and the first bad record named', () => {
    const backup = () => `${kind === 'postgres' ? `"${setup.env.TRIAD_PG_SCHEMA}".` : ''}decision_records_backup`;
    beforeAll(async () => {
      await raw.exec(`CREATE TABLE ${backup()} AS SELECT * FROM T`);
    });
    afterEach(async () => {
      // Put the log back as the projector wrote it; the next case starts intact.
      await raw.exec(`DELETE FROM T; INSERT INTO T SELECT * FROM ${backup()}`);
      expect((await server.request('GET', '/v1/decisions/verify')).body).toEqual({ ok: true, checked: 7, attestations: attestedDecisions(7) });
    });

    async function expectCaught(expected: { checked: number; firstBadRecord: { seq: number; decisionId: string; problem: string } }): Promise<void> {
      const res = await server.request('GET', '/v1/decisions/verify');
      expect(res.status).toBe(200);
      // The records were tampered with, not the events: every attestation still holds.
      expect(res.body).toEqual({ ok: false, checked: expected.checked, firstBadRecord: { ...expected.firstBadRecord, detail: expect.any(String) }, attestations: attestedDecisions(7) });
      const run = await cli('decisions', 'verify', '--json');
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout)).toEqual(res.body);
    }

    it('a reason changed with UPDATE → altered (record 3)', async () => {
      await raw.exec("UPDATE T SET reason = 'approved, all fine' WHERE seq = 3");
      await expectCaught({ checked: 2, firstBadRecord: { seq: 3, decisionId: log[2].decisionId, problem: 'altered' } });
      const human = await cli('decisions', 'verify');
      expect(human.code).toBe(1);
      expect(human.stdout).toContain(`NOT intact: record 3 (decision ${log[2].decisionId}) altered`);
    });

    it('a middle row deleted → removed (record 4)', async () => {
      await raw.exec('DELETE FROM T WHERE seq = 4');
      await expectCaught({ checked: 3, firstBadRecord: { seq: 4, decisionId: log[3].decisionId, problem: 'removed' } });
    });

    it('the last row deleted → missing_tail (record 7): the chain alone is valid, the event count is not', async () => {
      await raw.exec('DELETE FROM T WHERE seq = 7');
      await expectCaught({ checked: 6, firstBadRecord: { seq: 7, decisionId: log[6].decisionId, problem: 'missing_tail' } });
    });

    it('two seq values swapped → reordered (record 2 holds decision 5)', async () => {
      await raw.exec('UPDATE T SET seq = -2 WHERE seq = 2');
      await raw.exec('UPDATE T SET seq = 2 WHERE seq = 5');
      await raw.exec('UPDATE T SET seq = 5 WHERE seq = -2');
      await expectCaught({ checked: 1, firstBadRecord: { seq: 2, decisionId: log[4].decisionId, problem: 'reordered' } });
    });

    it('a forged record inserted, correctly chained → inserted (record 8)', async () => {
      const forged = recordFrom({ ...decisionEvent(8, { decisionId: 'forged-approval', decider: 'user:mallory' }), position: log[6].position + 1 }, log[6]);
      await raw.insert(forged);
      await expectCaught({ checked: 7, firstBadRecord: { seq: 8, decisionId: 'forged-approval', problem: 'inserted' } });
    });

    it('a record re-hashed after a change (hash column updated too) → altered', async () => {
      const changed = { ...log[5], reason: 'something else' };
      const { hash: _h, ...content } = changed;
      const rehashed = recordFrom(
        { type: 'ReviewDecided', streamId: `run-${content.runId}`, position: content.position, data: { ...content, at: content.decidedAt } },
        log[4],
      );
      await raw.exec(`UPDATE T SET reason = 'something else', hash = '${rehashed.hash}' WHERE seq = 6`);
      await expectCaught({ checked: 5, firstBadRecord: { seq: 6, decisionId: log[5].decisionId, problem: 'altered' } });
    });
  });

  describe('two processes on the same database', () => {
    let other: DecisionsServer;
    afterAll(async () => other?.close());

    it('both project and serve the log; decisions made through either form one chain', async () => {
      other = await startDecisionsServer({ ...setup.env, TRIAD_REVIEW_TIMER_MS: '0' });
      const reviews = [];
      for (let i = 0; i < 8; i++) reviews.push((await seed()).reviewId);
      await Promise.all(
        reviews.map(async (reviewId, i) => {
          const via = i % 2 === 0 ? server : other;
          const res = await via.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'rev', body: { reason: `via ${i % 2 === 0 ? 'A' : 'B'}` } });
          expect(res.status).toBe(200);
        }),
      );
      for (const via of [server, other]) {
        expect((await via.request('GET', '/v1/decisions/verify')).body).toEqual({ ok: true, checked: 15, attestations: attestedDecisions(15) });
        const all = (await via.request('GET', '/v1/decisions?limit=100')).body.decisions as DecisionRecord[];
        expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
      }
    });
  });
});
