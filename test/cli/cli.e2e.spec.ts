import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { runCliInProcess, stopInProcessCli, type CliResult } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';

// The CLI as a tool: exit codes, one-line errors, what goes to stdout and stderr, and a run whose
// reader went away. The compiled program runs in-process (test/support/in-process-cli.ts) against a
// real SQLite store and the offline model.

jest.setTimeout(120_000);

const dir = tempDir('triad-cli-');
const dataDir = join(dir.path, 'data');
const ONE_ITERATION = ['Write the letter A', '--criteria', 'file a.txt contains "A"'];

function env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRIAD_') && !k.startsWith('ANTHROPIC_')) base[k] = v;
  const out: NodeJS.ProcessEnv = { ...base, TRIAD_DATA_DIR: dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ann' };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

const triad = (args: string[], extra: Record<string, string | undefined> = {}, stdoutCloseAfterLines?: number) =>
  runCliInProcess(args, env(extra), { stdoutCloseAfterLines });

/** One line on stderr, no stack trace, no colour. */
function expectOneLineError(r: CliResult, code: number, pattern: RegExp): void {
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
  expect(r.stderr).toMatch(/^triad: [^\n]+\n$/);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\u001b\[|\n\s+at /);
}

async function show(runId: string): Promise<RunSummary> {
  const r = await triad(['runs', 'show', runId, '--json']);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as RunSummary;
}

afterAll(async () => {
  await stopInProcessCli();
  dir.remove();
});

describe('usage', () => {
  it('an unknown subcommand exits 2 with one line and runs nothing (not the group default)', async () => {
    for (const args of [['runs', 'cancle', 'run_x'], ['review', 'aprove', 'rev_x', '--reason', 'ok'], ['decisions', 'verfy'], ['approvals', 'aprove', 'x'], ['keys', 'ad', 'x'], ['nope']]) {
      const r = await triad(args);
      expectOneLineError(r, 2, /unknown command/);
    }
    const r = await triad(['runs', 'cancle', 'run_x']);
    expect(r.stderr).toBe("triad: unknown command 'triad runs cancle' (one of: list, show, wait, cancel, workspace)\n");
    // The defaults still answer when named or implied.
    expect((await triad(['runs', '--json'])).stdout).toBe('[]\n');
    expect((await triad(['runs', 'list', '--json'])).stdout).toBe('[]\n');
  });

  it('an unknown status filter exits 2 naming the statuses, as the API answers 400', async () => {
    expectOneLineError(await triad(['runs', 'list', '--status', 'bogus']), 2, /--status must be one of queued, planning, .*suspended/);
    expectOneLineError(await triad(['runs', 'list', '--status', 'bogus', '--json']), 2, /--status must be one of/);
    expect(await triad(['runs', 'list', '--status', 'awaiting_review', '--json'])).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });

  it('a decision reason or a goal no one can see exits 2 and writes nothing', async () => {
    for (const reason of ['', '   ', '\u200b', '\ufeff\u200d']) {
      expectOneLineError(await triad(['review', 'approve', 'rev_run_x_1', '--reason', reason, '--as', 'bob']), 2, /--reason must be 1 to 4000 characters, not blank/);
    }
    expectOneLineError(await triad(['run', '\u200b', '--criteria', 'file a.txt exists']), 2, /goal must not be blank/);
    expect((await triad(['runs', 'list', '--json'])).stdout).toBe('[]\n');
  });

  it('a launch the API would refuse exits 2 with one line naming the flags at fault, not the body fields, and writes nothing', async () => {
    expect(await triad(['run', 'Write a greeting'])).toEqual({ code: 2, stdout: '', stderr: 'triad: --criteria is required (one or more acceptance criteria)\n' });
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', '']), 2, /^triad: each value in --criteria should not be empty\n$/);
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', 'x', '--loop', 'executor=fast']), 2, /^triad: --loop executor=<strategy> must be one of the following values: react, plan_execute, hybrid, auto\n$/);
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', 'x', '--thinking', 'architect=10']), 2, /^triad: --thinking architect=<tokens> must not be less than 1024\n$/);
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', 'x', '--model', 'm'.repeat(201)]), 2, /^triad: --model must be shorter than or equal to 200 characters\n$/);
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', 'x', '--idempotency-key', 'a b']), 2, /^triad: --idempotency-key must be 1-128 characters/);
    expectOneLineError(await triad(['project', 'run', 'Ship it', '--task', '{"key":"a"}']), 2, /^triad: --task 1: goal is required; --task 1: acceptanceCriteria is required\n$/);
    expectOneLineError(await triad(['project', 'run', 'Ship it', '--strategy', 'random']), 2, /^triad: --strategy must be one of the following values: sequential, parallel, dag\n$/);
    // The domain's refusals of a verb's input too: a model this process does not serve, a fork's or a re-pin's overrides.
    expectOneLineError(await triad(['run', 'Write a greeting', '--criteria', 'x', '--model', 'gpt-4o']), 2, /^triad: --model: 'gpt-4o' is not served here; /);
    expectOneLineError(await triad(['fork', 'run_x', '--turn', '1', '--role-model', 'coder=m']), 2, /^triad: --role-model or --role-prompt coder=…: unknown role\n$/);
    expectOneLineError(await triad(['fork', 'run_x', '--turn', '1', '--role-prompt', 'executor=']), 2, /^triad: --role-prompt executor=<prompt> must be a non-empty string/);
    expectOneLineError(await triad(['resume', 'run_x', '--model', 'executor=']), 2, /^triad: --model executor=<model> must be a model name \(1 to 200 characters\)\n$/);
    expectOneLineError(await triad(['resume', 'run_x', '--endpoint', 'ftp://x']), 2, /^triad: --endpoint is not an http\(s\) base URL/);
    expect((await triad(['runs', 'list', '--json'])).stdout).toBe('[]\n');
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(await triad(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('configuration and store errors', () => {
  it('a configuration error exits 2 with `triad: <message>`', async () => {
    expectOneLineError(await triad(['runs', 'list'], { TRIAD_STORE: 'bogus' }), 2, /TRIAD_STORE must be sqlite, postgres, esdb or memory, got 'bogus'/);
    expectOneLineError(await triad(['runs', 'list', '--json'], { TRIAD_STORE: 'postgres', TRIAD_PG_URL: undefined }), 2, /TRIAD_STORE=postgres needs TRIAD_PG_URL/);
    expectOneLineError(await triad(['review', 'list'], { TRIAD_PORT: 'eighty' }), 2, /TRIAD_PORT must be a port number/);
    expectOneLineError(await triad(['runs', 'list'], { TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: 'http://127.0.0.1:2113' }), 2, /TRIAD_ESDB_URL is not an EventStoreDB connection string/);
  });

  it('a store that cannot be opened or reached exits 1 with one line', async () => {
    const notADir = join(dir.path, 'a-file');
    writeFileSync(notADir, 'x');
    expectOneLineError(await triad(['runs', 'list'], { TRIAD_DATA_DIR: join(notADir, 'data') }), 1, /^triad: cannot open the sqlite store: ENOTDIR/);
    // Nothing listens on port 1.
    expectOneLineError(
      await triad(['runs', 'list', '--json'], { TRIAD_STORE: 'postgres', TRIAD_PG_URL: 'postgres://postgres@127.0.0.1:1/test' }),
      1,
      /^triad: cannot open the postgres store: .*ECONNREFUSED/,
    );
    expectOneLineError(
      await triad(['runs', 'list'], { TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: 'esdb://admin:changeit@127.0.0.1:1?tls=false' }),
      1,
      /^triad: cannot open the esdb store: EventStoreDB at esdb:\/\/\*\*\*@127\.0\.0\.1:1\?tls=false: not reachable\n$/,
    );
  });

  it('`triad serve` that cannot start says why in one line (after its start-up log) and exits 1, or 2 for configuration', async () => {
    // A PostgreSQL or EventStoreDB store that is not there is waited for (test/cli/serve-waits-for-store.int.spec.ts).
    const keys = { TRIAD_API_KEYS: 'ops:operator:serve-secret-1', TRIAD_PORT: '0' };
    const lastLine = (r: CliResult) => r.stderr.trimEnd().split('\n').pop();
    const notADir = join(dir.path, 'serve-not-a-dir');
    writeFileSync(notADir, 'x');
    const sqlite = await triad(['serve'], { ...keys, TRIAD_DATA_DIR: join(notADir, 'data') });
    expect({ code: sqlite.code, stdout: sqlite.stdout }).toEqual({ code: 1, stdout: '' });
    expect(lastLine(sqlite)).toMatch(/^triad: cannot start: the sqlite store cannot be opened: ENOTDIR/);
    const badUrl = await triad(['serve'], { ...keys, TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: 'postgres://127.0.0.1:1' });
    expect({ code: badUrl.code, stdout: badUrl.stdout }).toEqual({ code: 2, stdout: '' });
    expect(lastLine(badUrl)).toMatch(/^triad: TRIAD_ESDB_URL is not an EventStoreDB connection string/);
    for (const r of [sqlite, badUrl]) expect(r.stderr).not.toMatch(/\u001b\[|\n\s+at /);
  });
});

describe('logs', () => {
  // A store of its own: a stored key with a malformed hash, which every app start warns about.
  // Its key is made by its first start, as on a store upgraded to signing: the key event written
  // before it is from before signing began.
  const logs = { TRIAD_DATA_DIR: join(dir.path, 'logs-data'), TRIAD_SIGNING_KEY_FILE: join(dir.path, 'logs-signing-key.pem') };
  beforeAll(async () => {
    const store = new SqliteEventStore({ file: join(logs.TRIAD_DATA_DIR, 'triad.db') });
    await store.append('apikeys', [{ type: 'ApiKeyAdded', data: { name: 'broken', roles: ['operator'], secretHash: 'abcd', addedBy: 'user:ann', at: new Date().toISOString() } }], { expectedRevision: 'any' });
    await store.close();
  });

  it('go to stderr, uncoloured when stderr is not a terminal', async () => {
    const r = await triad(['keys', 'list'], logs);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^broken {2}operator {2}added by user:ann at \S+\n$/);
    expect(r.stderr).toMatch(/^triad WARN \[StoredApiKeys\] stored API key 'broken' \(revision 0\) has no valid sha256 hash; ignored\n$/);
  });

  it('never reach --json output, which is exactly the JSON', async () => {
    const r = await triad(['keys', 'list', '--json'], logs);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ name: 'broken', roles: ['operator'] })]);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toBe('');
  });
});

describe('runs wait and a closed stdout', () => {
  let runId: string;

  it('`run --follow` whose reader goes away: exit 141, quietly, and the run is suspended, then resumes', async () => {
    const r = await triad(['run', ...ONE_ITERATION, '--follow'], {}, 2);
    expect(r.code).toBe(141);
    expect(r.stderr).not.toMatch(/triad: |Error/);
    runId = /^run (run_\S+) accepted/.exec(r.stdout)![1];
    // Recorded through the shutdown path: suspended, not left in a working phase with no driver.
    expect((await show(runId)).status).toBe('suspended');

    // Given a lease another process still holds (it died before releasing it), when the run is
    // resumed, then resume waits for the lease to lapse and resumes it, in one command.
    const db = new Database(join(dataDir, 'triad.db'));
    db.prepare('INSERT INTO run_leases (run_id, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at').run(runId, 'proc-gone', Date.now() + 1_500);
    db.close();
    const resumed = await triad(['resume', runId, '--json']);
    expect(resumed.stderr).toMatch(/driven by another process; waiting/);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout.trim().split('\n').pop()!)).toMatchObject({ runId, status: 'awaiting_review' });
  });

  it('`runs wait` on a run waiting for a human: exit 0 at once with the status, not at its timeout', async () => {
    // A timeout beyond the test's own: only an answer at once passes.
    const human = await triad(['runs', 'wait', runId, '--timeout-ms', '3600000']);
    expect(human).toEqual({ code: 0, stdout: `waiting: run ${runId} is awaiting_review\n`, stderr: '' });
    const json = await triad(['runs', 'wait', runId, '--timeout-ms', '3600000', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ status: 'waiting', runStatus: 'awaiting_review', startedAt: expect.any(String), endedAt: null });
  });
});
