import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seedRunAwaitingReview } from '../../bench/seed-review';
import { openStorage } from '../../src/storage/storage';
import { startFakeEsdb, type FakeEsdbServer } from '../support/esdb-server/esdb-server';
import { CLI_PATH, runCliInProcess, stopInProcessCli, type CliResult } from '../support/in-process-cli';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// `triad store copy` end to end: a SQLite store holding a real team run (offline model) that
// reached the review gate and was approved, plus an API key, copied into SQLite and PostgreSQL;
// the copy serves (decisions verify, replay, runs show, keys list answer as on the source). Then a
// copy killed with kill -9 and resumed, a target holding other data refused (and --force), and
// bad targets refused with one line. EventStoreDB targets are in-process servers of their own
// (a copy needs an empty database, which a shared TRIAD_ESDB_URL server is not).

jest.setTimeout(120_000);

const dir = tempDir('triad-copy-');
const sourceDir = join(dir.path, 'source');
const pgSchema = freshSchema('triad_copy');
const pgOtherSchema = freshSchema('triad_copy_other');
let runId: string;
let sourceEvents: number;

function env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRIAD_') && !k.startsWith('ANTHROPIC_')) base[k] = v;
  const out: NodeJS.ProcessEnv = { ...base, TRIAD_DATA_DIR: sourceDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ann' };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

const triad = (args: string[], extra: Record<string, string | undefined> = {}) => runCliInProcess(args, env(extra));
// bob decides with his API key, given to that one process (TRIAD_API_KEYS is not stored: the counts of key events stay the store's own).
const BOB_SECRET = 'bob-secret-copy-0123456789';
const asBob = { TRIAD_API_KEYS: `bob:reviewer:${BOB_SECRET}`, TRIAD_API_KEY: BOB_SECRET };
const onSqlite = (dataDir: string) => ({ TRIAD_DATA_DIR: dataDir });
const onPostgres = { TRIAD_STORE: 'postgres', TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: pgSchema };

function ok(r: CliResult): string {
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
  return r.stdout;
}

function expectOneLineError(r: CliResult, code: number, pattern: RegExp): void {
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
  expect(r.stderr).toMatch(/^triad: [^\n]+\n$/);
  expect(r.stderr).toMatch(pattern);
}

/** What a store answers about the run, its decisions and keys. */
async function served(extra: Record<string, string | undefined>): Promise<unknown> {
  const verify = await triad(['decisions', 'verify', '--json'], extra);
  expect(verify.code).toBe(0);
  return {
    verify: JSON.parse(verify.stdout) as unknown,
    replay: JSON.parse(ok(await triad(['replay', runId, '--json'], extra))) as unknown,
    run: JSON.parse(ok(await triad(['runs', 'show', runId, '--json'], extra))) as unknown,
    decisions: JSON.parse(ok(await triad(['decisions', 'list', '--json'], extra))) as unknown,
    keys: JSON.parse(ok(await triad(['keys', 'list', '--json'], extra))) as unknown,
  };
}

const countEvents = (dataDir: string) => {
  const db = new Database(join(dataDir, 'triad.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

let sourceServes: unknown;

beforeAll(async () => {
  // A real team run on the offline model, to the review gate; a reviewer approves it.
  ok(await triad(['run', 'Write the letter A', '--criteria', 'file a.txt contains "A"']));
  const [review] = JSON.parse(ok(await triad(['review', 'list', '--json']))) as { reviewId: string; runId: string }[];
  runId = review.runId;
  ok(await triad(['review', 'approve', review.reviewId, '--reason', 'looks right', '--as', 'bob'], asBob));
  ok(await triad(['keys', 'add', 'carol', '--roles', 'reviewer']));
  expect((JSON.parse(ok(await triad(['runs', 'show', runId, '--json']))) as { status: string }).status).toBe('completed');
  sourceEvents = countEvents(sourceDir);
  sourceServes = await served({});
});

afterAll(async () => {
  await stopInProcessCli();
  await dropSchema(pgSchema);
  await dropSchema(pgOtherSchema);
  dir.remove();
});

describe('a store holding an approved team run, copied', () => {
  const copyDir = join(dir.path, 'copy');

  it('into SQLite: every event, the decision record, checkpoint and key; the copy verifies and serves the same run', async () => {
    const r = await triad(['store', 'copy', '--to', `sqlite:${copyDir}`]);
    expect(r.code).toBe(0);
    // 4 streams: the run, its workspace, the API keys and the signing keys (the server key that attests decisions and key events).
    expect(r.stdout).toMatch(new RegExp(`^copied ${sourceEvents} event\\(s\\) \\(0 already there\\), 1 decision record\\(s\\), 1 run checkpoint\\(s\\) to sqlite:.* — verified: ${sourceEvents} events in 4 streams \\(1 runs, 0 projects, 1 workspace blobs, 1 API key events\\), sha256 [0-9a-f]{16}…, decision log intact \\(1 records\\)\\n$`));
    // Progress on stderr, one line per phase here (a small store).
    expect(r.stderr).toMatch(/^store copy: events \d+\/\d+ \(100%\)$/m);
    expect(r.stderr).toMatch(/^store copy: verifying /m);
    expect(await served(onSqlite(copyDir))).toEqual(sourceServes);
  });

  it('into SQLite again: nothing left to copy, verified again', async () => {
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', `sqlite:${copyDir}`, '--json']))) as {
      events: { copied: number; alreadyInTarget: number };
      decisionRecords: { copied: number };
      verification: { ok: boolean };
    };
    expect(report).toMatchObject({ events: { copied: 0, alreadyInTarget: sourceEvents }, decisionRecords: { copied: 0 }, verification: { ok: true } });
  });

  it('a copy whose decision record was altered afterwards is not verified: exit 1 naming it', async () => {
    const db = new Database(join(copyDir, 'triad.db'));
    db.prepare("UPDATE decision_records SET reason = 'edited'").run();
    db.close();
    const r = await triad(['store', 'copy', '--to', `sqlite:${copyDir}`, '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^copy to sqlite:.* NOT verified: decision log: decision log NOT intact: record 1 .*\n$/);
  });

  it('into PostgreSQL (a schema of its own): verified, and the copy serves the same run', async () => {
    const r = await triad(['store', 'copy', '--to', `${PG_URL}?schema=${pgSchema}`, '--json']);
    const report = JSON.parse(ok(r)) as { verification: { ok: boolean; source: { hash: string }; target: { hash: string; events: number } } };
    expect(report.verification.ok).toBe(true);
    expect(report.verification.target).toEqual(report.verification.source);
    expect(report.verification.target.events).toBe(sourceEvents);
    expect(await served(onPostgres)).toEqual(sourceServes);
  });

  it('back from PostgreSQL into SQLite: the same events, verified', async () => {
    const backDir = join(dir.path, 'back');
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', `sqlite:${backDir}`, '--json'], onPostgres))) as {
      verification: { ok: boolean; target: { hash: string; events: number } };
    };
    expect(report.verification).toMatchObject({ ok: true, target: { events: sourceEvents } });
    const original = JSON.parse(ok(await triad(['store', 'copy', '--to', `sqlite:${backDir}`, '--json']))) as { events: { copied: number } };
    // Copied from the source itself, the round trip is recognised as the same store: nothing to add.
    expect(original.events.copied).toBe(0);
  });
});

describe('a target that holds other data', () => {
  const otherDir = join(dir.path, 'other');

  it('is refused with one line, exit 4, and left as it was; --force erases it and copies', async () => {
    ok(await triad(['keys', 'add', 'zed', '--roles', 'auditor'], onSqlite(otherDir)));
    // The process's signing-key registration, then zed's key.
    expect(countEvents(otherDir)).toBe(2);
    const r = await triad(['store', 'copy', '--to', `sqlite:${otherDir}`]);
    expectOneLineError(r, 4, /the target holds other data: its event at position 1 .* nothing was written \(--force erases the target/);
    expect(countEvents(otherDir)).toBe(2);
    expect(JSON.parse(ok(await triad(['keys', 'list', '--json'], onSqlite(otherDir))))).toMatchObject([{ name: 'zed' }]);

    const forced = await triad(['store', 'copy', '--to', `sqlite:${otherDir}`, '--force', '--quiet']);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toBe('');
    expect(await served(onSqlite(otherDir))).toEqual(sourceServes);
  });
});

describe('a PostgreSQL target schema that holds other data', () => {
  it('is refused, then dropped and copied into with --force', async () => {
    const other = { TRIAD_STORE: 'postgres', TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: pgOtherSchema };
    ok(await triad(['keys', 'add', 'zed', '--roles', 'auditor'], other));
    const url = `${PG_URL}?schema=${pgOtherSchema}`;
    expectOneLineError(await triad(['store', 'copy', '--to', url]), 4, /the target holds other data/);
    expect(JSON.parse(ok(await triad(['keys', 'list', '--json'], other)))).toMatchObject([{ name: 'zed' }]);
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', url, '--force', '--json']))) as { verification: { ok: boolean } };
    expect(report.verification.ok).toBe(true);
    expect(JSON.parse(ok(await triad(['keys', 'list', '--json'], other)))).toEqual((sourceServes as { keys: unknown }).keys);
  });
});

describe('bad targets: one line, nothing written', () => {
  it.each([
    ['an unknown scheme', ['--to', 'mysql://h/db'], 2, /unknown store URL scheme 'mysql:'/],
    ['a path that is a file', ['--to', 'sqlite:FILE'], 2, /must name a data directory/],
    ['the configured store itself', ['--to', 'sqlite:SOURCE'], 2, /the target is the configured store itself/],
    ['a PostgreSQL server that does not answer', ['--to', 'postgres://postgres:pw@127.0.0.1:1/test?schema=nowhere'], 1, /cannot open the target postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test .*ECONNREFUSED/],
    ['an EventStoreDB server that does not answer', ['--to', 'esdb://admin:pw@127.0.0.1:1?tls=false'], 1, /cannot open the target esdb:\/\/admin:\*\*\*@127\.0\.0\.1:1\?tls=false: .*not reachable/],
  ])('%s', async (_what, args, code, pattern) => {
    const file = join(dir.path, 'a-file');
    writeFileSync(file, 'x');
    const resolved = args.map((a) => a.replace('sqlite:FILE', `sqlite:${file}`).replace('sqlite:SOURCE', `sqlite:${sourceDir}`));
    const before = countEvents(sourceDir);
    const r = await triad(['store', 'copy', ...resolved]);
    expectOneLineError(r, code, pattern);
    expect(r.stderr).not.toMatch(/pw@|\n\s+at /);
    expect(countEvents(sourceDir)).toBe(before);
  });
});

describe('a copy killed mid-way (kill -9)', () => {
  it('resumes from what the target holds and verifies', async () => {
    // A larger store, so the killed copy is caught half-way: 60 runs at the gate, 480 events.
    const bigDir = join(dir.path, 'big');
    const big = await openStorage({ store: 'sqlite', dataDir: bigDir });
    await Promise.all(Array.from({ length: 60 }, () => seedRunAwaitingReview(big.events, { launchedBy: 'user:ann' })));
    const total = await big.events.headPosition();
    await big.close();
    const copyDir = join(dir.path, 'killed');

    const child = spawn(process.execPath, [CLI_PATH, 'store', 'copy', '--to', `sqlite:${copyDir}`, '--batch', '1', '--quiet'], {
      env: env(onSqlite(bigDir)),
      stdio: 'ignore',
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // The file exists before its tables do: until then there is nothing to count.
    const copiedSoFar = () => {
      try {
        return countEvents(copyDir);
      } catch {
        return 0;
      }
    };
    await waitFor('the copy to have written some events', async () => existsSync(join(copyDir, 'triad.db')) && copiedSoFar() >= 10, 30_000, 5);
    child.kill('SIGKILL');
    await exited;
    const copiedBeforeKill = countEvents(copyDir);
    expect(copiedBeforeKill).toBeGreaterThan(0);
    expect(copiedBeforeKill).toBeLessThan(total);

    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', `sqlite:${copyDir}`, '--json'], onSqlite(bigDir)))) as {
      events: { copied: number; alreadyInTarget: number };
      verification: { ok: boolean; target: { events: number; runs: number } };
    };
    expect(report.events).toEqual({ copied: total - copiedBeforeKill, alreadyInTarget: copiedBeforeKill });
    expect(report.verification).toMatchObject({ ok: true, target: { events: total, runs: 60 } });
  });
});

describe('into EventStoreDB (an in-process server)', () => {
  let esdb: FakeEsdbServer;
  const esdbDir = join(dir.path, 'esdb-data');
  const onEsdb = () => ({ TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: esdb.url, TRIAD_DATA_DIR: esdbDir });

  beforeAll(async () => {
    esdb = await startFakeEsdb();
  });
  afterAll(async () => {
    await esdb.stop();
  });

  it('from SQLite: verified; the copy serves the same run and its decision log verifies with the records as they were', async () => {
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', esdb.url, '--json']))) as {
      events: { copied: number };
      decisionRecords: { copied: number };
      runCheckpoints: { copied: number };
      verification: { ok: boolean; source: unknown; target: { events: number }; decisionLog: { ok: boolean; records: number } };
    };
    expect(report).toMatchObject({ events: { copied: sourceEvents }, decisionRecords: { copied: 1 }, runCheckpoints: { copied: 1 } });
    expect(report.verification).toMatchObject({ ok: true, target: { events: sourceEvents }, decisionLog: { ok: true, records: 1 } });
    expect(report.verification.target).toEqual(report.verification.source);
    expect(await served(onEsdb())).toEqual(sourceServes);
    // The record is the source's own, hash and position included (nothing re-hashed).
    const [record] = JSON.parse(ok(await triad(['decisions', 'list', '--json']))) as { hash: string; position: number }[];
    expect((JSON.parse(ok(await triad(['decisions', 'list', '--json'], onEsdb()))) as unknown[])[0]).toMatchObject({ hash: record.hash, position: record.position });
  });

  it('again: nothing left to copy', async () => {
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', esdb.url, '--json']))) as { events: { copied: number; alreadyInTarget: number }; verification: { ok: boolean } };
    expect(report).toMatchObject({ events: { copied: 0, alreadyInTarget: sourceEvents }, verification: { ok: true } });
  });

  it('decisions made on the copy afterwards chain on and verify; the whole store copies back out into SQLite, verified', async () => {
    ok(await triad(['run', 'Write the letter B', '--criteria', 'file b.txt contains "B"'], onEsdb()));
    const reviews = JSON.parse(ok(await triad(['review', 'list', '--json'], onEsdb()))) as { reviewId: string }[];
    expect(reviews).toHaveLength(1);
    ok(await triad(['review', 'approve', reviews[0].reviewId, '--reason', 'fine', '--as', 'bob'], { ...onEsdb(), ...asBob }));
    const verify = JSON.parse(ok(await triad(['decisions', 'verify', '--json'], onEsdb()))) as { ok: boolean; checked: number };
    expect(verify).toMatchObject({ ok: true, checked: 2 });
    const records = JSON.parse(ok(await triad(['decisions', 'list', '--json'], onEsdb()))) as { position: number }[];
    expect(records[1].position).toBeGreaterThan(records[0].position);

    const outDir = join(dir.path, 'from-esdb');
    const report = JSON.parse(ok(await triad(['store', 'copy', '--to', `sqlite:${outDir}`, '--json'], onEsdb()))) as {
      verification: { ok: boolean; decisionLog: { ok: boolean; records: number } };
    };
    expect(report.verification).toMatchObject({ ok: true, decisionLog: { ok: true, records: 2 } });
    expect(JSON.parse(ok(await triad(['decisions', 'verify', '--json'], onSqlite(outDir))))).toMatchObject({ ok: true, checked: 2 });
    expect(JSON.parse(ok(await triad(['decisions', 'list', '--json'], onSqlite(outDir))))).toEqual(records);
    // The copied run forks on the copy as on the source.
    expect(JSON.parse(ok(await triad(['fork', runId, '--turn', '1', '--json'], onEsdb())))).toMatchObject({ runId: expect.any(String) });
  });

  it('holding events of its own, is refused with one line, exit 4; --force cannot erase it (exit 2)', async () => {
    const other = await startFakeEsdb();
    try {
      const there = { TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: other.url, TRIAD_DATA_DIR: esdbDir };
      ok(await triad(['keys', 'add', 'zed', '--roles', 'auditor'], there));
      expectOneLineError(await triad(['store', 'copy', '--to', other.url]), 4, /the target holds other data/);
      expectOneLineError(await triad(['store', 'copy', '--to', other.url, '--force']), 2, /--force cannot erase an EventStoreDB target/);
      expect(JSON.parse(ok(await triad(['keys', 'list', '--json'], there)))).toMatchObject([{ name: 'zed' }]);
    } finally {
      await other.stop();
    }
  });

  it('killed mid-way (kill -9) and run again: resumes from what the target holds, no event twice, verified', async () => {
    const bigDir = join(dir.path, 'big-esdb');
    const big = await openStorage({ store: 'sqlite', dataDir: bigDir });
    await Promise.all(Array.from({ length: 20 }, () => seedRunAwaitingReview(big.events, { launchedBy: 'user:ann' })));
    const total = await big.events.headPosition();
    await big.close();
    const server = await startFakeEsdb();
    const target = await openStorage({ store: 'esdb', dataDir: bigDir, esdbUrl: server.url });
    try {
      // Counted in the server's log (triad's streams are `triad:<id>`), not through reads.
      const copiedSoFar = () => server.log.filter((r) => r.stream.startsWith('triad:')).length;
      const child = spawn(process.execPath, [CLI_PATH, 'store', 'copy', '--to', server.url, '--batch', '1', '--quiet'], { env: env(onSqlite(bigDir)), stdio: 'ignore' });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await waitFor('the copy to have written some events', async () => copiedSoFar() >= 10, 30_000, 5);
      child.kill('SIGKILL');
      await exited;
      const copiedBeforeKill = copiedSoFar();
      expect(copiedBeforeKill).toBeLessThan(total);

      const report = JSON.parse(ok(await triad(['store', 'copy', '--to', server.url, '--json'], onSqlite(bigDir)))) as {
        events: { copied: number; alreadyInTarget: number };
        verification: { ok: boolean; target: { events: number; runs: number } };
      };
      expect(report.events).toEqual({ copied: total - copiedBeforeKill, alreadyInTarget: copiedBeforeKill });
      expect(report.verification).toMatchObject({ ok: true, target: { events: total, runs: 20 } });
      const ids = (await target.events.readAll()).map((e) => e.id);
      expect(new Set(ids).size).toBe(total);
    } finally {
      await target.close();
      await server.stop();
    }
  });
});
