import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { tempDir } from '../support/temp-dir';
import { hostProcessesWith, uniqueSleep } from '../support/host-processes';
import { freshPgSchema, type PgSchema } from '../review-gate/gate/gate-support';
import { appEnv, KEYS, startApp, waitForRun, type AppServer, type Loose } from '../team/resilience/approvals-app';

// The sandbox, attacked the way an agent would: through real runs whose scripted model (the real
// Anthropic SDK against a loopback Messages API) calls run_command and write_file on a real
// `triad serve` child, on SQLite and on PostgreSQL. Every attack here succeeded before commands
// ran in the sandbox; each now fails, and the work an executor does with commands still works.

jest.setTimeout(180_000);

const API_KEY = 'sk-ant-sandbox-attack-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };
const PG_PASSWORD = 'Pg-Pass-Sandbox-77';
const HOST_SECRET = 'host-db-password-4242';
const ROOT = resolve(__dirname, '..', '..');

describe.each([['sqlite'], ['postgres']])('the sandbox under attack (%s)', (store) => {
  let api: FakeMessagesApi;
  let server: AppServer;
  let pg: PgSchema | undefined;
  let loopback: Server;
  let loopbackHits = 0;
  const dir = tempDir('triad-sandbox-attack-');
  const dataDir = join(dir.path, 'data');
  const signingKey = join(dir.path, 'keys', 'signing-key.pem');

  beforeAll(async () => {
    api = await startFakeMessagesApi({ apiKey: API_KEY });
    pg = store === 'postgres' ? await freshPgSchema() : undefined;
    // A password in the store's URL (trust auth ignores it): it must never be readable by a command.
    const pgEnv = pg ? { ...pg.env, TRIAD_PG_URL: pg.env.TRIAD_PG_URL!.replace('postgres@', `postgres:${PG_PASSWORD}@`) } : {};
    server = await startApp(appEnv(dataDir, api.url, API_KEY, { ...pgEnv, DB_PASSWORD: HOST_SECRET, TRIAD_SANDBOX_MAX_MEMORY_MB: '256', TRIAD_SIGNING_KEY_FILE: signingKey }));
    loopback = createServer((_req, res) => {
      loopbackHits++;
      res.end('reached the host\n');
    });
    await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', () => r()));
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await api?.stop();
    await pg?.drop();
    await new Promise((r) => loopback?.close(r));
    dir.remove();
  });

  const events = async (runId: string): Promise<Array<{ type: string; data: Loose }>> => {
    const res = await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' });
    expect(res.status).toBe(200);
    return res.body.events;
  };

  /** One run to the gate: the executor makes `calls` in turn, then submits; the reviewer approves. Returns each call's output. */
  async function run(calls: Array<[string, Record<string, unknown>]>, launch: Record<string, unknown> = {}): Promise<{ runId: string; outputs: string[] }> {
    api.enqueue(
      toolUseStep('submit_plan', { plan: 'do it' }),
      ...calls.map(([name, input]) => toolUseStep(name, input)),
      toolUseStep('submit_work', { summary: 'done' }),
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
    );
    const res = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'Work', acceptanceCriteria: ['it works'], team: TEAM, toolApproval: { threshold: 'none' }, ...launch } });
    expect(res.status).toBe(202);
    const runId = res.body.runId as string;
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review', 120_000);
    const completed = (await events(runId)).filter((e) => e.type === 'ToolCallCompleted' && !String(e.data.name).startsWith('submit_')).map((e) => String(e.data.output));
    return { runId, outputs: completed };
  }

  let victim: string;
  const every: string[] = [];

  it('a victim run leaves a file in its workspace and waits at its gate', async () => {
    const r = await run([['write_file', { path: 'secret.txt', content: 'the victim\'s own work' }]]);
    victim = r.runId;
    expect(readFileSync(join(dataDir, 'workspaces', victim, 'secret.txt'), 'utf8')).toBe('the victim\'s own work');
  });

  it('reads no server secret through /proc, plain, base64 or reversed, and no process but its own', async () => {
    const { runId, outputs } = await run([
      ['run_command', { command: "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ; env" }],
      ['run_command', { command: "cat /proc/*/environ | base64 -w0; echo; cat /proc/*/environ | rev; ps -e 2>/dev/null || ls /proc" }],
      ['run_command', { command: 'ls /proc | grep -c "^[0-9]"' }],
    ]);
    every.push(runId);
    expect(outputs[0]).toMatch(/HOME=\/tmp/);
    // bubblewrap's init, the command's shell and what it runs: nothing of the host.
    expect(Number(/^(\d+)/.exec(outputs[2]!)?.[1])).toBeLessThan(8);
  });

  it('cannot list or read another run\'s workspace, write the data directory, or open the store', async () => {
    const victimFile = join(dataDir, 'workspaces', victim, 'secret.txt');
    const sqlite = join(dataDir, 'triad.db');
    const before = existsSync(sqlite) ? statSync(sqlite).mtimeMs : undefined;
    const forge = [
      `const Database = require(${JSON.stringify(join(ROOT, 'node_modules', 'better-sqlite3'))});`,
      `const db = new Database(${JSON.stringify(sqlite)});`,
      "db.prepare(\"insert into events (stream_id, type, data) values ('run-x', 'ReviewDecided', '{}')\").run();",
      "console.log('FORGED');",
    ].join('\n');
    const { runId, outputs } = await run([
      ['run_command', { command: `ls ..; ls ../*/ 2>&1; cat ${victimFile} 2>&1; cat ../${victim}/secret.txt 2>&1` }],
      ['run_command', { command: `touch ${dataDir}/pwned 2>&1; echo junk >> ${sqlite} 2>&1; ls ${dataDir} 2>&1; ls ${ROOT} 2>&1 | head -3` }],
      ['write_file', { path: 'forge.js', content: forge }],
      ['run_command', { command: 'node forge.js 2>&1 | head -3' }],
      ['run_command', { command: "bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432 && echo CONNECTED' 2>&1" }],
    ]);
    every.push(runId);
    expect(outputs.join('\n')).not.toContain('the victim\'s own work');
    expect(outputs.join('\n')).not.toContain('FORGED');
    expect(outputs.join('\n')).not.toContain('CONNECTED');
    expect(existsSync(join(dataDir, 'pwned'))).toBe(false);
    if (before !== undefined) expect(readFileSync(sqlite).includes(Buffer.from('junk\n'))).toBe(false);
    // The victim still waits for a human; no decision exists; the log verifies.
    expect((await waitForRun(server, victim, () => true)).status).toBe('awaiting_review');
    const decisions = await server.request('GET', '/v1/decisions', { as: 'aud' });
    expect(decisions.body.decisions).toEqual([]);
  });

  it("cannot read the server's signing key, where it is or where triad keeps it by default", async () => {
    const pem = readFileSync(signingKey, 'utf8');
    const { runId, outputs } = await run([
      ['run_command', { command: `cat ${signingKey} 2>&1; ls ${join(dir.path, 'keys')} 2>&1; cat ${process.env.HOME}/.config/triad/signing-key.pem 2>&1; echo done` }],
    ]);
    every.push(runId);
    const out = outputs.join('\n');
    expect(out).toContain('done');
    expect(out).not.toContain('PRIVATE KEY');
    expect(out).not.toContain(pem.split('\n')[1]);
  });

  it('leaves no process behind: setsid, nohup, a double fork and disown all end with the command', async () => {
    const mark = uniqueSleep();
    const { runId } = await run([
      ['run_command', { command: `(setsid sh -c 'sleep ${mark}' &); nohup sleep ${mark} >/dev/null 2>&1 & sh -c '(sleep ${mark} &) &'; bash -c 'sleep ${mark} & disown'; echo started` }],
    ]);
    every.push(runId);
    expect(hostProcessesWith(mark)).toEqual([]);
  });

  it('reaches a loopback server on the host only when the run allows it, through the proxy', async () => {
    const port = (loopback.address() as AddressInfo).port;
    const denied = await run([['run_command', { command: `curl -sS -m 5 http://127.0.0.1:${port}/ 2>&1; echo rc=$?` }]]);
    every.push(denied.runId);
    expect(denied.outputs[0]).not.toContain('reached the host');
    expect(loopbackHits).toBe(0);
    const allowed = await run([['run_command', { command: `curl -sS -m 5 http://127.0.0.1:${port}/ 2>&1; curl -sS -m 5 http://example.invalid/ 2>&1` }]], {
      team: { ...TEAM, executor: { model: MODEL, network: [`127.0.0.1:${port}`] } },
    });
    every.push(allowed.runId);
    expect(allowed.outputs[0]).toContain('reached the host');
    expect(allowed.outputs[0]).toContain("example.invalid:80 is not in this run's network allow-list");
    expect(loopbackHits).toBe(1);
    // Recorded with the run and shown with it.
    const launched = (await events(allowed.runId)).find((e) => e.type === 'RunLaunched')!;
    expect(launched.data.sandbox).toEqual({ mode: 'bubblewrap', network: { executor: [`127.0.0.1:${port}`] } });
    expect((await waitForRun(server, allowed.runId, () => true)).sandbox).toEqual({ mode: 'bubblewrap', network: { executor: [`127.0.0.1:${port}`] } });
  });

  it('stops thousands of processes and unbounded memory at their limits, as tool errors, while /health answers', async () => {
    const mark = uniqueSleep();
    const bomb = run([
      ['run_command', { command: `i=0; while [ $i -lt 3000 ]; do sleep ${mark} & i=$((i+1)); done 2>/dev/null; echo spawned` }],
      ['run_command', { command: "node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'" }],
    ]);
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { sandbox: string }).sandbox).toBe('bubblewrap');
    const { runId, outputs } = await bomb;
    every.push(runId);
    expect(outputs[0]).toContain('[limit: the command tried to run more than its limit of 256 processes at once');
    // A memory cgroup stops the sandbox and says so; without one, the process's own limit fails its allocation.
    expect(outputs[1]).toMatch(/\[limit: the command reached its memory limit of 256 MiB and was stopped\]|out of memory|Allocation failed/i);
    expect(hostProcessesWith(mark)).toEqual([]);
  });

  it('does the work: node, git init && git commit, and a shell pipeline in the workspace', async () => {
    const { runId, outputs } = await run([
      ['run_command', { command: "node -e \"require('fs').writeFileSync('answer.txt', String(6 * 7))\"" }],
      ['run_command', { command: 'git init -q && git add -A && git commit -qm "first" && git log --oneline | wc -l > commits.txt' }],
      ['run_command', { command: "printf 'b\\na\\nc\\n' | sort | tr -d '\\n' > sorted.txt && cat sorted.txt" }],
    ]);
    every.push(runId);
    expect(outputs.map((o) => o.split('\n').at(-1))).toEqual(['[exit code 0]', '[exit code 0]', '[exit code 0]']);
    const ws = join(dataDir, 'workspaces', runId);
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42');
    expect(readFileSync(join(ws, 'commits.txt'), 'utf8').trim()).toBe('1');
    expect(readFileSync(join(ws, 'sorted.txt'), 'utf8')).toBe('abc');
  });

  it('no key of TRIAD_API_KEYS, no Anthropic key, no database password in any event, response, log line or model request', async () => {
    const secrets = [...Object.values(KEYS), API_KEY, HOST_SECRET, ...(pg ? [PG_PASSWORD] : [])];
    const encoded = (s: string) => [s, Buffer.from(s).toString('base64').slice(0, 12), [...s].reverse().join('')];
    const texts: string[] = [];
    for (const runId of [victim, ...every]) {
      texts.push(JSON.stringify(await events(runId)));
      texts.push((await server.request('GET', `/v1/runs/${runId}`, { as: 'aud' })).text);
    }
    texts.push(JSON.stringify(api.requests.map((r) => r.body)));
    texts.push(server.stderr);
    const all = texts.join('\n');
    for (const secret of secrets) for (const form of encoded(secret)) expect({ secret, found: all.includes(form) }).toEqual({ secret, found: false });
  });
});
