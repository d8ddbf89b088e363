import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import type { RunSummary } from '../../../src/team/runs/run-summary';
import { tempDir } from '../../support/temp-dir';
import { CLI, freePort, httpRequest, lastJson, runCli, sleep, triadEnv } from './gate-support';

// The review gate and API keys through the compiled CLI (dist/cli/main.js, run in-process; `triad
// serve` runs in a process of its own, stopped with SIGTERM as an operator does), as an operator
// uses them. Exit codes: 0 ok, 2 bad input, 3 not found, 4 conflict, 5 forbidden (self-review).

jest.setTimeout(180_000);

const CRITERIA = ['--criteria', 'file a.txt contains "A"'];

/** What `triad keys add --json` prints. */
interface AddedKey {
  name: string;
  roles: string[];
  secret: string;
  replaced: boolean;
}

/** The exit code, with stderr in the failure message when it is not the expected one. */
function expectExit(res: { code: number | null; stderr: string }, code: number): void {
  expect({ code: res.code, stderr: res.code === code ? '' : res.stderr }).toEqual({ code, stderr: '' });
}

async function storedEvents(dataDir: string, streamId: string) {
  const file = join(dataDir, 'triad.db');
  if (!existsSync(file)) return [];
  const store = new SqliteEventStore({ file });
  try {
    return await store.readStream(streamId);
  } finally {
    await store.close();
  }
}

/** Whose API key the CLI decides with: carol launches; dave reviews; eve only operates. */
const CLI_KEYS = {
  carol: 'carol-secret-0123456789',
  dave: 'dave-secret-0123456789',
  eve: 'eve-secret-0123456789',
} as const;
const CLI_API_KEYS = `carol:operator+reviewer:${CLI_KEYS.carol},dave:reviewer:${CLI_KEYS.dave},eve:operator:${CLI_KEYS.eve}`;

describe('triad review (CLI)', () => {
  const dir = tempDir('triad-gate-cli-');
  const dataDir = join(dir.path, 'data');
  const env = { TRIAD_DATA_DIR: dataDir, TRIAD_API_KEYS: CLI_API_KEYS };
  const withKeyOf = (holder: keyof typeof CLI_KEYS) => ({ ...env, TRIAD_API_KEY: CLI_KEYS[holder] });
  afterAll(() => dir.remove());

  async function runAsCarol(): Promise<{ runId: string; reviewId: string }> {
    const res = await runCli(['run', 'Write the letter A', ...CRITERIA, '--as', 'carol', '--json'], env);
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const run = lastJson<RunSummary>(res.stdout);
    expect(run).toMatchObject({ status: 'awaiting_review', launchedBy: 'user:carol' });
    return { runId: run.runId, reviewId: run.pendingReview!.reviewId };
  }

  it('the launcher may not decide (exit 5, nothing written); another user may (exit 0); a second decision conflicts (exit 4)', async () => {
    const { runId, reviewId } = await runAsCarol();
    const stream = `run-${runId}`;
    const before = (await storedEvents(dataDir, stream)).length;

    const listed = await runCli(['review', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    expect(lastJson(listed.stdout)).toContainEqual(expect.objectContaining({ reviewId, runId, launchedBy: 'user:carol' }));

    // carol's own key: she launched the run, so she may not decide its review.
    const self = await runCli(['review', 'approve', reviewId, '--as', 'carol', '--reason', 'ok'], withKeyOf('carol'));
    expect(self.code).toBe(5);
    expect(self.stderr).toContain('you may not decide this review');
    const selfReject = await runCli(['review', 'reject', reviewId, '--reason', 'no', '--no-rework'], withKeyOf('carol'));
    expect(selfReject.code).toBe(5);
    expect(selfReject.stderr).toContain('you may not decide this review');
    // TRIAD_USER names no decider: carol's key is carol whatever it says.
    const named = await runCli(['review', 'approve', reviewId, '--reason', 'ok'], { ...withKeyOf('carol'), TRIAD_USER: 'dave' });
    expectExit(named, 5);
    expect(named.stderr).toContain('you may not decide this review');
    // Names are case-insensitive: --as CAROL is carol's key's holder, the launcher.
    for (const as of ['CAROL', 'Carol']) {
      const res = await runCli(['review', 'reject', reviewId, '--as', as, '--reason', 'no', '--no-rework'], withKeyOf('carol'));
      expectExit(res, 5);
      expect(res.stderr).toContain('you may not decide this review');
    }
    expect(await storedEvents(dataDir, stream)).toHaveLength(before);

    // Bad input: exit 2, nothing written.
    expectExit(await runCli(['review', 'approve', reviewId, '--as', 'dave', '--reason', '   '], withKeyOf('dave')), 2);
    expectExit(await runCli(['review', 'approve', reviewId, '--as', 'dave'], withKeyOf('dave')), 2);
    expectExit(await runCli(['review', 'approve', reviewId, '--as', 'not a name', '--reason', 'ok'], withKeyOf('dave')), 2);
    // Unknown reviews: exit 3.
    expectExit(await runCli(['review', 'approve', `rev_${runId}_9`, '--as', 'dave', '--reason', 'ok'], withKeyOf('dave')), 3);
    expectExit(await runCli(['review', 'reject', 'nonsense', '--as', 'dave', '--reason', 'ok'], withKeyOf('dave')), 3);
    expect(await storedEvents(dataDir, stream)).toHaveLength(before);

    const ok = await runCli(['review', 'approve', reviewId, '--as', 'dave', '--reason', 'a.txt has the A', '--json'], withKeyOf('dave'));
    expect(ok.code).toBe(0);
    expect(lastJson(ok.stdout)).toMatchObject({ reviewId, outcome: 'approved', runStatus: 'completed' });
    const events = await storedEvents(dataDir, stream);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['ReviewDecided', 'RunEnded']);
    expect(events[events.length - 2].data).toMatchObject({ decider: 'user:dave', deciderKind: 'human', outcome: 'approved', reason: 'a.txt has the A' });

    const again = await runCli(['review', 'approve', reviewId, '--as', 'dave', '--reason', 'again'], withKeyOf('dave'));
    expect(again.code).toBe(4);
    expect(await storedEvents(dataDir, stream)).toHaveLength(events.length);
  });

  it('reject with rework drives the run to the gate again; --no-rework ends it REJECTED', async () => {
    const { runId, reviewId } = await runAsCarol();
    const rework = await runCli(['review', 'reject', reviewId, '--as', 'dave', '--reason', 'Also mention B', '--json'], withKeyOf('dave'));
    expect(rework.code).toBe(0);
    const out = lastJson<{ run: RunSummary }>(rework.stdout);
    expect(out).toMatchObject({ reviewId, outcome: 'rejected', runStatus: 'executing', run: { status: 'awaiting_review', iteration: 2 } });
    expect(out.run.pendingReview?.reviewId).toBe(`rev_${runId}_2`);

    // The key read from a file decides as the variable does.
    const keyFile = join(dir.path, 'dave.key');
    writeFileSync(keyFile, `${CLI_KEYS.dave}\n`, { mode: 0o600 });
    const end = await runCli(['review', 'reject', `rev_${runId}_2`, '--key-file', keyFile, '--reason', 'not needed after all', '--no-rework', '--json'], env);
    expect(end.code).toBe(0);
    expect(lastJson(end.stdout)).toMatchObject({ outcome: 'rejected', runStatus: 'failed' });
    const events = await storedEvents(dataDir, `run-${runId}`);
    expect(events[events.length - 1].data).toMatchObject({ status: 'failed', reason: 'REJECTED' });
    expect(events[events.length - 2].data).toMatchObject({ decider: 'user:dave', outcome: 'rejected' });
  });
});

describe('triad review (CLI): deciding needs the reviewer’s own credential', () => {
  const dir = tempDir('triad-gate-cred-');
  const dataDir = join(dir.path, 'data');
  const env = { TRIAD_DATA_DIR: dataDir, TRIAD_API_KEYS: CLI_API_KEYS };
  afterAll(() => dir.remove());

  it('no credential, a wrong key, --as someone else, a key without the reviewer role: exit 5 with one line, nothing written', async () => {
    const launched = await runCli(['run', 'Write the letter A', ...CRITERIA, '--as', 'carol', '--json'], env);
    expectExit(launched, 0);
    const run = lastJson<RunSummary>(launched.stdout);
    expect(run.status).toBe('awaiting_review');
    const reviewId = run.pendingReview!.reviewId;
    const before = (await storedEvents(dataDir, `run-${run.runId}`)).length;

    // A name alone, --as or TRIAD_USER, is no credential.
    for (const [args, extra] of [
      [['review', 'approve', reviewId, '--reason', 'ok'], {}],
      [['review', 'approve', reviewId, '--as', 'dave', '--reason', 'ok'], {}],
      [['review', 'reject', reviewId, '--reason', 'no', '--no-rework'], { TRIAD_USER: 'dave' }],
    ] as const) {
      const res = await runCli([...args], { ...env, ...extra });
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 5, stdout: '' });
      expect(res.stderr).toMatch(/^triad: deciding needs a credential: [^\n]+\n$/);
    }

    const refused = async (args: string[], extra: Record<string, string>, why: RegExp) => {
      const res = await runCli(args, { ...env, ...extra });
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 5, stdout: '' });
      expect(res.stderr).toMatch(/^triad: [^\n]+\n$/);
      expect(res.stderr).toMatch(why);
    };
    // A key that is no one's, in the variable or in a file.
    await refused(['review', 'approve', reviewId, '--as', 'dave', '--reason', 'ok'], { TRIAD_API_KEY: 'dave-secret-guessed-0000' }, /the API key is not valid/);
    const wrongFile = join(dir.path, 'wrong.key');
    writeFileSync(wrongFile, 'not-anyones-key-0123456789\n', { mode: 0o600 });
    await refused(['review', 'approve', reviewId, '--key-file', wrongFile, '--reason', 'ok'], {}, /the API key is not valid/);
    // dave's key does not decide as carol, nor carol's as dave.
    await refused(['review', 'approve', reviewId, '--as', 'carol', '--reason', 'ok'], { TRIAD_API_KEY: CLI_KEYS.dave }, /--as names carol, but the credential is dave's/);
    await refused(['review', 'approve', reviewId, '--as', 'dave', '--reason', 'ok'], { TRIAD_API_KEY: CLI_KEYS.carol }, /--as names dave, but the credential is carol's/);
    // eve only operates: her key has no reviewer role.
    await refused(['review', 'approve', reviewId, '--reason', 'ok'], { TRIAD_API_KEY: CLI_KEYS.eve }, /eve may not decide this: it needs the role reviewer/);
    await refused(['review', 'reject', reviewId, '--as', 'eve', '--reason', 'no', '--no-rework'], { TRIAD_API_KEY: CLI_KEYS.eve }, /needs the role reviewer/);

    // Nothing written: the run still awaits this review and the decision log is empty.
    expect(await storedEvents(dataDir, `run-${run.runId}`)).toHaveLength(before);
    const shown = await runCli(['runs', 'show', run.runId, '--json'], env);
    expectExit(shown, 0);
    expect(lastJson<RunSummary>(shown.stdout)).toMatchObject({ status: 'awaiting_review', pendingReview: { reviewId } });
    const decisions = await runCli(['decisions', 'list', '--json'], env);
    expectExit(decisions, 0);
    expect(lastJson(decisions.stdout)).toEqual([]);
  });
});

describe('triad keys (CLI) and triad serve with stored keys', () => {
  const dir = tempDir('triad-gate-keys-');
  const dataDir = join(dir.path, 'data');
  const env = { TRIAD_DATA_DIR: dataDir };
  let serve: ReturnType<typeof spawn> | undefined;
  afterAll(async () => {
    if (serve && serve.exitCode === null) {
      const exited = new Promise((r) => serve!.once('exit', r));
      serve.kill('SIGTERM');
      await exited;
    }
    dir.remove();
  });

  it('refuses bad names and roles with exit 2 and writes nothing', async () => {
    for (const args of [
      ['keys', 'add', 'ann', '--roles', 'operator+owner'],
      ['keys', 'add', 'ann', '--roles', ''],
      ['keys', 'add', 'ann', '--roles', 'operator,,reviewer'],
      ['keys', 'add', 'a b', '--roles', 'operator'],
      ['keys', 'add', 'a:b', '--roles', 'operator'],
      ['keys', 'add', 'ann'],
    ]) {
      const res = await runCli(args, env);
      expect({ args, code: res.code }).toEqual({ args, code: 2 });
    }
    expect(await storedEvents(dataDir, 'apikeys')).toEqual([]);
  });

  it('triad serve refuses to start with no key at all (exit 2)', async () => {
    const res = await runCli(['serve'], { ...env, TRIAD_PORT: String(await freePort()) }, 30_000);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('no API keys');
  });

  it('keys add stores only the hash; serve starts on stored keys alone and picks up keys added while it runs', async () => {
    const added = await runCli(['keys', 'add', 'ann', '--roles', 'operator+reviewer', '--as', 'root', '--json'], env);
    expect(added.code).toBe(0);
    const ann = lastJson<AddedKey>(added.stdout);
    expect(ann).toMatchObject({ name: 'ann', roles: ['operator', 'reviewer'], replaced: false });
    expect(ann.secret).toMatch(/^triad_[A-Za-z0-9_-]{43}$/);

    const stored = await storedEvents(dataDir, 'apikeys');
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      type: 'ApiKeyAdded',
      data: { name: 'ann', roles: ['operator', 'reviewer'], addedBy: 'user:root', secretHash: createHash('sha256').update(ann.secret).digest('hex') },
    });
    expect(JSON.stringify(stored)).not.toContain(ann.secret);

    // Human output prints the secret once too.
    const human = await runCli(['keys', 'add', 'bob', '--roles', 'reviewer'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/added key 'bob' \(reviewer\)\nsecret \(shown only now\): triad_\S+/);

    // serve with no TRIAD_API_KEYS: the stored keys are enough.
    const port = await freePort();
    serve = spawn(process.execPath, [CLI, 'serve'], { env: triadEnv({ ...env, TRIAD_PORT: String(port) }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    serve.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    serve.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const deadline = Date.now() + 30_000;
    while (!out.includes('triad listening')) {
      if (serve.exitCode !== null || Date.now() > deadline) throw new Error(`triad serve did not start:\n${out}\n${err}`);
      await sleep(50);
    }
    const url = `http://127.0.0.1:${port}`;
    expect((await httpRequest(url, 'GET', '/v1/reviews', { as: { secret: ann.secret } })).status).toBe(200);
    expect((await httpRequest(url, 'GET', '/v1/reviews', { as: { secret: 'triad_not-a-key' } })).status).toBe(401);

    // A key added by the CLI while the server runs is accepted within a second.
    const zedAdded = await runCli(['keys', 'add', 'zed', '--roles', 'reviewer,auditor', '--json'], env);
    expect(zedAdded.code).toBe(0);
    const zed = lastJson<AddedKey>(zedAdded.stdout);
    const zedAt = Date.now();
    let status = 0;
    while (Date.now() - zedAt < 1000) {
      status = (await httpRequest(url, 'GET', '/v1/reviews', { as: { secret: zed.secret } })).status;
      if (status === 200) break;
      await sleep(25);
    }
    expect({ status, withinMs: 1000 }).toEqual({ status: 200, withinMs: 1000 });

    // Re-adding a name replaces its stored key: the old secret stops working within a second.
    const replaced = await runCli(['keys', 'add', 'ann', '--roles', 'auditor', '--json'], env);
    expect(replaced.code).toBe(0);
    const ann2 = lastJson<AddedKey>(replaced.stdout);
    expect(ann2).toMatchObject({ name: 'ann', roles: ['auditor'], replaced: true });
    const replacedAt = Date.now();
    let oldStatus = 0;
    while (Date.now() - replacedAt < 1000) {
      oldStatus = (await httpRequest(url, 'GET', '/v1/runs', { as: { secret: ann.secret } })).status;
      if (oldStatus === 401) break;
      await sleep(25);
    }
    expect(oldStatus).toBe(401);
    expect((await httpRequest(url, 'GET', '/v1/runs', { as: { secret: ann2.secret } })).status).toBe(200);
    expect((await httpRequest(url, 'GET', '/v1/reviews', { as: { secret: ann2.secret } })).status).toBe(403);
    expect((await storedEvents(dataDir, 'apikeys')).map((e) => e.type)).toEqual(['ApiKeyAdded', 'ApiKeyAdded', 'ApiKeyAdded', 'ApiKeyReplaced']);

    // A name that differs only in case from a stored key collides with it: exit 4, nothing written.
    const collision = await runCli(['keys', 'add', 'ANN', '--roles', 'operator'], env);
    expectExit(collision, 4);
    expect(collision.stderr).toContain("give 'ann' to replace that key");
    expect((await storedEvents(dataDir, 'apikeys')).map((e) => e.type)).toEqual(['ApiKeyAdded', 'ApiKeyAdded', 'ApiKeyAdded', 'ApiKeyReplaced']);

    // keys list: names and roles, never secrets or hashes.
    const list = await runCli(['keys', 'list', '--json'], env);
    expect(list.code).toBe(0);
    const keys = lastJson<Array<{ name: string; roles: string[] }>>(list.stdout);
    expect(keys.map((k) => [k.name, k.roles.join('+')])).toEqual([
      ['ann', 'auditor'],
      ['bob', 'reviewer'],
      ['zed', 'reviewer+auditor'],
    ]);
    expect(list.stdout).not.toContain('secretHash');
  });
});
